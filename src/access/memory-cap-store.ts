/**
 * The embedded cap store: counters in process memory, one Map per UTC day. Only the newest
 * day seen is kept once a later day starts, so memory is bounded by the buckets active in one
 * day. Counting is synchronous, so concurrent requests of one process cannot over-admit.
 *
 * Opened with a journal file (`MemoryCapStore.open`, what `receiptd serve` does), every count
 * and refund is on disk before it is answered, so a kill -9 and a restart forget no count:
 * the daily caps, the per-address shares and the evaluation-key limits all live here. A
 * journal that cannot be written (a full disk) is reported and counting goes on in memory:
 * verification needs no disk, and a refused request would protect nothing.
 */
import { type JournalRecord, StateJournal } from "../storage/state-journal.js";
import { type CapDecision, type CapStore, checkLimit, decide, utcDay } from "./caps.js";

/** Where a journal that cannot be written is reported (a pino logger fits); content-free. */
export interface CapJournalLog {
  warn(details: object, message: string): void;
}

export class MemoryCapStore implements CapStore {
  readonly #now: () => number;
  /** Day number → bucket → requests counted that day. */
  readonly #days = new Map<number, Map<string, number>>();
  #newestDay = Number.NEGATIVE_INFINITY;
  #journal: StateJournal | null = null;
  #log: CapJournalLog | null = null;
  #journalFailed = false;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A store whose counts survive restarts in the journal file at `path`. */
  static async open(
    path: string,
    now: () => number = Date.now,
    log: CapJournalLog | null = null,
  ): Promise<MemoryCapStore> {
    const store = new MemoryCapStore(now);
    store.#log = log;
    store.#journal = await StateJournal.open(
      path,
      (records) => store.#restore(records),
      () => store.#snapshot(),
    );
    return store;
  }

  /** Records: `["=", day, bucket, count]` (snapshot), `["+"|"-", day, bucket]` (a change). */
  #restore(records: JournalRecord[]): void {
    const today = utcDay(this.#now());
    for (const [kind, day, bucket, count] of records) {
      if (typeof day !== "number" || typeof bucket !== "string" || day < today) continue;
      const counts = this.#countsOf(day);
      const before = counts.get(bucket) ?? 0;
      if (kind === "=" && typeof count === "number") counts.set(bucket, count);
      else if (kind === "+") counts.set(bucket, before + 1);
      else if (kind === "-" && before > 1) counts.set(bucket, before - 1);
      else if (kind === "-") counts.delete(bucket);
    }
  }

  #snapshot(): JournalRecord[] {
    const records: JournalRecord[] = [];
    for (const [day, counts] of this.#days) {
      for (const [bucket, count] of counts) records.push(["=", day, bucket, count]);
    }
    return records;
  }

  #countsOf(day: number): Map<string, number> {
    if (day > this.#newestDay) {
      this.#newestDay = day;
      for (const seen of this.#days.keys()) if (seen < day) this.#days.delete(seen);
    }
    let counts = this.#days.get(day);
    if (counts === undefined) {
      counts = new Map();
      this.#days.set(day, counts);
    }
    return counts;
  }

  async #record(record: JournalRecord): Promise<void> {
    if (this.#journal === null) return;
    try {
      await this.#journal.append(record);
      this.#journalFailed = false;
    } catch (error) {
      if (this.#journalFailed) return;
      this.#journalFailed = true;
      this.#log?.warn(
        { err: error, path: this.#journal.path },
        "cap counts cannot be journaled; they are kept in memory until the journal works again",
      );
    }
  }

  async consume(bucket: string, limit: number, nowMs: number = this.#now()): Promise<CapDecision> {
    checkLimit(limit);
    const day = utcDay(nowMs);
    const counts = this.#countsOf(day);
    const before = counts.get(bucket) ?? 0;
    const decision = decide(before, limit, nowMs);
    if (decision.allowed) {
      counts.set(bucket, before + 1);
      await this.#record(["+", day, bucket]);
    }
    return decision;
  }

  async refund(bucket: string, nowMs: number): Promise<void> {
    const day = utcDay(nowMs);
    const counts = this.#days.get(day);
    const count = counts?.get(bucket);
    if (counts === undefined || count === undefined) return;
    if (count > 1) counts.set(bucket, count - 1);
    else counts.delete(bucket);
    await this.#record(["-", day, bucket]);
  }

  async count(bucket: string, nowMs: number): Promise<number> {
    return this.#days.get(utcDay(nowMs))?.get(bucket) ?? 0;
  }

  /** Buckets counted for the days still held (tests check that old days are dropped). */
  get size(): number {
    let total = 0;
    for (const counts of this.#days.values()) total += counts.size;
    return total;
  }

  async close(): Promise<void> {
    await this.#journal?.close();
    this.#days.clear();
  }
}
