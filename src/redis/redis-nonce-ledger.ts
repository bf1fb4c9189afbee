/**
 * The distributed x402 nonce ledger: one Redis key per reserved authorization, shared by every
 * instance, so an authorization replayed against another instance is refused too.
 *
 * Errors propagate on purpose: while the ledger cannot be reached, nobody can know whether an
 * authorization is already being settled, so the caller refuses the paid request (503) rather
 * than risk a replay. There is no in-memory fallback here, unlike the caps.
 */
import { type NonceKey, type NonceLedger, nonceIdentity } from "../payments/nonce-ledger.js";
import type { RedisConnection } from "./connection.js";
import { taggedKey } from "./keys.js";

export class RedisNonceLedger implements NonceLedger {
  readonly #connection: RedisConnection;

  /** Uses `connection` without owning it: `close()` leaves it open for the other stores. */
  constructor(connection: RedisConnection) {
    this.#connection = connection;
  }

  key(key: NonceKey): string {
    return taggedKey(this.#connection.prefix, "x402:nonce", nonceIdentity(key));
  }

  async reserve(key: NonceKey, expiresAtMs: number): Promise<boolean> {
    if (!Number.isFinite(expiresAtMs)) {
      throw new RangeError(`a reservation expiry is a finite instant, got ${expiresAtMs}`);
    }
    // PXAT takes whole milliseconds; rounding up never shortens a reservation. An expiry
    // already past stores nothing lasting, so the authorization stays reservable.
    const answer = await this.#connection.run((client) =>
      client.set(this.key(key), "1", "PXAT", Math.max(1, Math.ceil(expiresAtMs)), "NX"),
    );
    return answer === "OK";
  }

  async release(key: NonceKey): Promise<void> {
    await this.#connection.run((client) => client.del(this.key(key)));
  }

  async close(): Promise<void> {}
}
