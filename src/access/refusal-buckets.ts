/**
 * Keyless refusals, limited per address in the process's memory (issue 34, finding 5). A
 * keyless read refused (a 404 for an unknown anchor or receipt, a cap's 429) is not charged,
 * so nothing bounded how many an address could ask for: one address sent 1,111 a second, each
 * costing the anonymous cap's reserve and refund in Redis. Each refusal now takes a token from
 * its address's bucket; an address with none left is answered `429 too_many_refusals` at the
 * door, before any cap is consulted: no Redis command at all.
 *
 * Per process on purpose: the bucket exists to spare Redis, so it must not cost a Redis
 * command itself. With N web processes an address gets up to N buckets, which is still a
 * bound, and a balancer that keeps an address on one process makes it one.
 */

/** Refusals an address may collect at once (a burst an honest client never reaches). */
export const REFUSAL_BURST = 60;
/** Refusals an address earns back per second. */
export const REFUSALS_PER_SECOND = 1;
/** Addresses tracked at once; the least recently refused are forgotten first. */
export const MAX_TRACKED_ADDRESSES = 65_536;

interface Bucket {
  tokens: number;
  atMs: number;
}

export class RefusalBuckets {
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    readonly burst = REFUSAL_BURST,
    readonly perSecond = REFUSALS_PER_SECOND,
    readonly maxTracked = MAX_TRACKED_ADDRESSES,
  ) {}

  /** Seconds until `address` may be refused again, or 0 when it still has a token. */
  waitSeconds(address: string, nowMs: number): number {
    const tokens = this.#tokens(address, nowMs);
    if (tokens >= 1) return 0;
    return Math.max(1, Math.ceil((1 - tokens) / this.perSecond));
  }

  /** Counts one refusal against `address`. */
  take(address: string, nowMs: number): void {
    const tokens = this.#tokens(address, nowMs);
    // Re-inserted so that Map order is least recently refused first.
    this.#buckets.delete(address);
    this.#buckets.set(address, { tokens: Math.max(0, tokens - 1), atMs: nowMs });
    if (this.#buckets.size > this.maxTracked) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest !== undefined) this.#buckets.delete(oldest);
    }
  }

  #tokens(address: string, nowMs: number): number {
    const bucket = this.#buckets.get(address);
    if (bucket === undefined) return this.burst;
    const earned = (Math.max(0, nowMs - bucket.atMs) / 1000) * this.perSecond;
    return Math.min(this.burst, bucket.tokens + earned);
  }
}
