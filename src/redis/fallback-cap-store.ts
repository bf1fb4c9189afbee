/**
 * Keeps the daily caps working while Redis is briefly down: when the shared (primary) store
 * fails, requests are counted in this process's memory instead, so the service keeps
 * answering. During an outage each instance enforces the cap on its own, so a client could
 * get up to (instances × cap) through; that is the price of staying up, and outages are
 * short. Memory counts are not merged back into Redis afterwards.
 *
 * After a failure the primary is left alone for `retryAfterMs`, so a hung Redis costs one
 * command timeout per retry window rather than one per request.
 */
import { type CapDecision, type CapStore, checkLimit } from "../access/caps.js";
import { MemoryCapStore } from "../access/memory-cap-store.js";

export interface FallbackCapStoreOptions {
  /** The wall clock of `consume` without an instant (default `Date.now`). */
  now?: () => number;
  /** A monotonic clock for the retry window (default `performance.now`). */
  monotonicNow?: () => number;
  /** How long to count in memory before trying the primary again (default 1000 ms). */
  retryAfterMs?: number;
  /** Told once when an outage starts and once when it ends; never per request. */
  log?: { warn(message: string): void; info(message: string): void };
}

export class FallbackCapStore implements CapStore {
  readonly #primary: CapStore;
  readonly #fallback: MemoryCapStore;
  readonly #now: () => number;
  readonly #monotonicNow: () => number;
  readonly #retryAfterMs: number;
  readonly #log: { warn(message: string): void; info(message: string): void };
  /** Monotonic instant before which the primary is not tried, or null while it is healthy. */
  #retryAt: number | null = null;

  constructor(primary: CapStore, options: FallbackCapStoreOptions = {}) {
    this.#primary = primary;
    this.#now = options.now ?? Date.now;
    this.#fallback = new MemoryCapStore(this.#now);
    this.#monotonicNow = options.monotonicNow ?? (() => performance.now());
    this.#retryAfterMs = options.retryAfterMs ?? 1000;
    this.#log = options.log ?? { warn() {}, info() {} };
  }

  /** True while requests are being counted in memory. */
  get degraded(): boolean {
    return this.#retryAt !== null;
  }

  async consume(bucket: string, limit: number, nowMs: number = this.#now()): Promise<CapDecision> {
    // A bad cap is the caller's bug, not an outage: refuse it before anything is tried.
    checkLimit(limit);
    if (this.#retryAt !== null && this.#monotonicNow() < this.#retryAt) {
      return this.#fallback.consume(bucket, limit, nowMs);
    }
    try {
      const decision = await this.#primary.consume(bucket, limit, nowMs);
      if (this.#retryAt !== null) {
        this.#retryAt = null;
        this.#log.info("daily caps are shared again (the cap store is reachable)");
      }
      return decision;
    } catch {
      if (this.#retryAt === null) {
        this.#log.warn(
          "cap store unreachable; counting daily caps in this process until it returns",
        );
      }
      this.#retryAt = this.#monotonicNow() + this.#retryAfterMs;
      return this.#fallback.consume(bucket, limit, nowMs);
    }
  }

  /**
   * Refunds where requests are being counted now. A request counted on one side of an outage's
   * edge and refunded on the other gives its unit back to the wrong store (one unit, once per
   * edge): the price of not remembering, per request, where it was counted. A refund the
   * primary cannot take goes to memory, where the request was counted if the outage began
   * before it (and where it is a no-op for a bucket memory has not counted).
   */
  async refund(bucket: string, nowMs: number): Promise<void> {
    if (this.#retryAt !== null && this.#monotonicNow() < this.#retryAt) {
      return this.#fallback.refund(bucket, nowMs);
    }
    try {
      await this.#primary.refund(bucket, nowMs);
    } catch {
      await this.#fallback.refund(bucket, nowMs);
    }
  }

  /** Reads where requests are being counted now, like `refund`. */
  async count(bucket: string, nowMs: number): Promise<number> {
    if (this.#retryAt !== null && this.#monotonicNow() < this.#retryAt) {
      return this.#fallback.count(bucket, nowMs);
    }
    try {
      return await this.#primary.count(bucket, nowMs);
    } catch {
      return this.#fallback.count(bucket, nowMs);
    }
  }

  async close(): Promise<void> {
    await this.#primary.close();
    await this.#fallback.close();
  }
}
