/**
 * The embedded cap store: counters in process memory, one Map per UTC day. Only the newest
 * day seen is kept once a later day starts, so memory is bounded by the buckets active in one
 * day. Counting is synchronous, so concurrent requests of one process cannot over-admit.
 */
import { type CapDecision, type CapStore, checkLimit, decide, utcDay } from "./caps.js";

export class MemoryCapStore implements CapStore {
  readonly #now: () => number;
  /** Day number → bucket → requests counted that day. */
  readonly #days = new Map<number, Map<string, number>>();
  #newestDay = Number.NEGATIVE_INFINITY;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async consume(bucket: string, limit: number, nowMs: number = this.#now()): Promise<CapDecision> {
    checkLimit(limit);
    const day = utcDay(nowMs);
    if (day > this.#newestDay) {
      this.#newestDay = day;
      for (const seen of this.#days.keys()) if (seen < day) this.#days.delete(seen);
    }
    let counts = this.#days.get(day);
    if (counts === undefined) {
      counts = new Map();
      this.#days.set(day, counts);
    }
    const before = counts.get(bucket) ?? 0;
    const decision = decide(before, limit, nowMs);
    if (decision.allowed) counts.set(bucket, before + 1);
    return decision;
  }

  async refund(bucket: string, nowMs: number): Promise<void> {
    const counts = this.#days.get(utcDay(nowMs));
    const count = counts?.get(bucket);
    if (counts === undefined || count === undefined) return;
    if (count > 1) counts.set(bucket, count - 1);
    else counts.delete(bucket);
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
    this.#days.clear();
  }
}
