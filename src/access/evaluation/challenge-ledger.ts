/**
 * The replay ledger of proof-of-work challenges: a challenge is spent once. Challenges are
 * stateless until then (`challenges.ts`); spending one records its salt until the challenge
 * expires, after which its MAC check refuses it anyway, so the ledger holds only the
 * challenges that could still be replayed.
 *
 * Embedded mode keeps it in process memory, journaled to a file (`MemoryChallengeLedger.open`)
 * so that a kill -9 and a restart do not make a spent challenge good again; distributed mode in Redis
 * (`src/redis/redis-challenge-ledger.ts`, `SET … NX PXAT`), shared by every instance, so a
 * challenge spent on one instance is refused on all. Like the x402 nonce ledger it has no
 * fallback: while Redis is down nobody can tell a replay, and issuance is refused (503).
 */

import { type JournalRecord, StateJournal } from "../../storage/state-journal.js";

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

  #journal: StateJournal | null = null;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * A ledger whose spent challenges survive restarts in the journal file at `path`: `spend`
   * resolves true only once the salt is on disk, and rejects when it cannot be written (the
   * issuer answers 503: a spend that could be forgotten is no spend).
   */
  static async open(path: string, now: () => number = Date.now): Promise<MemoryChallengeLedger> {
    const ledger = new MemoryChallengeLedger(now);
    ledger.#journal = await StateJournal.open(
      path,
      (records) => ledger.#restore(records),
      () => ledger.#snapshot(),
    );
    return ledger;
  }

  /** Records: `[salt, expiresAtMs]`; expired ones are dropped. */
  #restore(records: JournalRecord[]): void {
    const now = this.#now();
    for (const [salt, until] of records) {
      if (typeof salt === "string" && typeof until === "number" && until > now) {
        this.#spent.set(salt, until);
      }
    }
  }

  #snapshot(): JournalRecord[] {
    const now = this.#now();
    const records: JournalRecord[] = [];
    for (const [salt, until] of this.#spent) if (until > now) records.push([salt, until]);
    return records;
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
    if (this.#journal !== null) {
      try {
        await this.#journal.append([salt, expiresAtMs]);
      } catch (error) {
        // Not spent after all: the client may try the same challenge again once it can be kept.
        if (this.#spent.get(salt) === expiresAtMs) this.#spent.delete(salt);
        throw error;
      }
    }
    return true;
  }

  /** Entries held, expired ones not swept yet included. */
  get size(): number {
    return this.#spent.size;
  }

  async close(): Promise<void> {
    await this.#journal?.close();
    this.#spent.clear();
  }
}
