/**
 * The distributed replay ledger of evaluation-key challenges: one Redis key per spent
 * challenge, `SET NX`, shared by every instance. Its lifetime is set relative to the caller's
 * clock (`PX`, as the cap store does), so it does not depend on Redis's clock agreeing with
 * ours. Errors propagate: while Redis cannot answer, a replay cannot be told apart, so
 * issuance is refused (503) rather than risk one.
 */
import type { ChallengeLedger } from "../access/evaluation/challenge-ledger.js";
import type { RedisConnection } from "./connection.js";
import { taggedKey } from "./keys.js";

export class RedisChallengeLedger implements ChallengeLedger {
  readonly #connection: RedisConnection;
  readonly #now: () => number;

  /** Uses `connection` without owning it: `close()` leaves it open for the other stores. */
  constructor(connection: RedisConnection, now: () => number = Date.now) {
    this.#connection = connection;
    this.#now = now;
  }

  key(salt: string): string {
    return taggedKey(this.#connection.prefix, "evaluation:challenge", salt);
  }

  async spend(salt: string, expiresAtMs: number): Promise<boolean> {
    if (!Number.isFinite(expiresAtMs)) {
      throw new RangeError(`an expiry is a finite instant, got ${expiresAtMs}`);
    }
    const lifetimeMs = Math.ceil(expiresAtMs - this.#now());
    // Already expired: nothing to remember, and the challenge's own expiry refuses it.
    if (lifetimeMs <= 0) return true;
    const answer = await this.#connection.run((client) =>
      client.set(this.key(salt), "1", "PX", lifetimeMs, "NX"),
    );
    return answer === "OK";
  }

  async close(): Promise<void> {}
}
