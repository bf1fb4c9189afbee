/**
 * The embedded digest cache: a Map in insertion order, so the first key is the oldest entry
 * and eviction is O(1). Expired entries are dropped when read and whenever the cache is
 * written, so memory stays bounded by `maxEntries` entries.
 */
import type { CachedVerdict, DigestCache, DigestCacheLimits } from "./digest-cache.js";

export class MemoryDigestCache implements DigestCache {
  readonly #entries = new Map<string, CachedVerdict>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(limits: DigestCacheLimits, now: () => number = Date.now) {
    this.#ttlMs = limits.ttlSeconds * 1000;
    this.#maxEntries = limits.maxEntries;
    this.#now = now;
  }

  #expired(entry: CachedVerdict, now: number): boolean {
    return now - entry.storedAtMs >= this.#ttlMs;
  }

  async get(key: string): Promise<CachedVerdict | null> {
    const entry = this.#entries.get(key);
    if (entry === undefined) return null;
    if (this.#expired(entry, this.#now())) {
      this.#entries.delete(key);
      return null;
    }
    return entry;
  }

  async set(key: string, value: Omit<CachedVerdict, "storedAtMs">): Promise<void> {
    const now = this.#now();
    // Re-inserting moves the key to the young end: a refreshed entry is the newest one.
    this.#entries.delete(key);
    this.#entries.set(key, { ...value, storedAtMs: now });
    for (const [oldestKey, oldest] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && !this.#expired(oldest, now)) break;
      this.#entries.delete(oldestKey);
    }
  }

  /** Entries currently held (expired ones included until the next write). */
  get size(): number {
    return this.#entries.size;
  }

  async close(): Promise<void> {
    this.#entries.clear();
  }
}
