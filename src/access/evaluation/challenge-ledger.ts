/**
 * The replay ledger of proof-of-work challenges: a challenge is spent once. Challenges are
 * stateless until then (`challenges.ts`); spending one records its salt until the challenge
 * expires, after which its MAC check refuses it anyway, so the ledger holds only the
 * challenges that could still be replayed.
 *
 * Embedded mode keeps it in process memory; distributed mode in Redis
 * (`src/redis/redis-challenge-ledger.ts`, `SET … NX PXAT`), shared by every instance, so a
 * challenge spent on one instance is refused on all. Like the x402 nonce ledger it has no
 * fallback: while Redis is down nobody can tell a replay, and issuance is refused (503).
 */

export interface ChallengeLedger {
  /**
   * Records `salt` as spent until `expiresAtMs`, unless it already is; true when this call
   * recorded it. Concurrent calls for one salt: exactly one gets true.
   */
  spend(salt: string, expiresAtMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Kept past the challenge's expiry for instances whose clocks disagree a little. */
export const SPENT_GRACE_MS = 60_000;

/** The embedded ledger: expired entries are swept when the map has doubled. */
export class MemoryChallengeLedger implements ChallengeLedger {
  readonly #spent = new Map<string, number>();
  readonly #now: () => number;
  #sweepAt = 1024;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async spend(salt: string, expiresAtMs: number): Promise<boolean> {
    if (!Number.isFinite(expiresAtMs)) {
      throw new RangeError(`an expiry is a finite instant, got ${expiresAtMs}`);
    }
    const now = this.#now();
    const held = this.#spent.get(salt);
    if (held !== undefined && held > now) return false;
    this.#spent.set(salt, expiresAtMs);
    if (this.#spent.size >= this.#sweepAt) {
      for (const [id, until] of this.#spent) if (until <= now) this.#spent.delete(id);
      this.#sweepAt = Math.max(1024, this.#spent.size * 2);
    }
    return true;
  }

  /** Entries held, expired ones not swept yet included. */
  get size(): number {
    return this.#spent.size;
  }

  async close(): Promise<void> {
    this.#spent.clear();
  }
}
