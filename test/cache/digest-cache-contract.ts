/**
 * The behaviour every `DigestCache` must have (architecture.md: one contract suite, run
 * against each implementation). Each test opens a fresh, empty cache with its own limits and
 * an injected clock; expiry is judged by that clock (a Redis TTL, on Redis's own clock, may
 * only ever be a backstop that outlives it).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type {
  CachedVerdict,
  DigestCache,
  DigestCacheLimits,
} from "../../src/cache/digest-cache.js";

export interface DigestCacheFixture {
  cache: DigestCache;
  /** Entries held (expired ones included until the next write). */
  size(): Promise<number>;
  /** Closes the cache and removes whatever the fixture created. */
  dispose(): Promise<void>;
}

export type OpenDigestCache = (
  limits: DigestCacheLimits,
  now: () => number,
) => Promise<DigestCacheFixture>;

export const cacheEntry = (verdict: string): Omit<CachedVerdict, "storedAtMs"> => ({
  verdictJson: `{"verdict":"${verdict}"}`,
  receipt: { error: "none" },
  verifiedAt: "2026-11-21T00:00:00Z",
});

export function digestCacheContract(name: string, open: OpenDigestCache): void {
  /** Runs `body` against a fresh cache whose clock starts at `start`. */
  async function withCache(
    start: number,
    limits: DigestCacheLimits,
    body: (fixture: DigestCacheFixture, clock: { now: number }) => Promise<void>,
  ): Promise<void> {
    const clock = { now: start };
    const fixture = await open(limits, () => clock.now);
    try {
      await body(fixture, clock);
    } finally {
      await fixture.dispose();
    }
  }

  describe(`DigestCache contract: ${name}`, () => {
    test("an absent key is a miss", () =>
      withCache(0, { ttlSeconds: 900, maxEntries: 3 }, async ({ cache }) => {
        assert.equal(await cache.get("absent"), null);
      }));

    test("an entry comes back exactly as stored, with the store time", () =>
      withCache(1_700_000_000_000, { ttlSeconds: 900, maxEntries: 3 }, async ({ cache }) => {
        const withReceipt = {
          verdictJson: '{"verdict":"TRUSTED","n":18446744073709551616}',
          receipt: { json: '{"receipt":"é\\u0000"}' },
          verifiedAt: "2026-11-21T12:34:56Z",
        };
        await cache.set("r", withReceipt);
        await cache.set("e", cacheEntry("FAILED"));
        assert.deepEqual(await cache.get("r"), { ...withReceipt, storedAtMs: 1_700_000_000_000 });
        assert.deepEqual(await cache.get("e"), {
          ...cacheEntry("FAILED"),
          storedAtMs: 1_700_000_000_000,
        });
      }));

    test("an entry lives for exactly the TTL", () =>
      withCache(1_000_000, { ttlSeconds: 900, maxEntries: 3 }, async ({ cache, size }, clock) => {
        await cache.set("k", cacheEntry("TRUSTED"));
        clock.now += 899_999;
        assert.equal((await cache.get("k"))?.verdictJson, '{"verdict":"TRUSTED"}');
        assert.equal((await cache.get("k"))?.storedAtMs, 1_000_000);
        clock.now += 1;
        assert.equal(await cache.get("k"), null);
        assert.equal(await size(), 0);
      }));

    test("a rewrite stores the new value and restarts its TTL", () =>
      withCache(0, { ttlSeconds: 10, maxEntries: 3 }, async ({ cache }, clock) => {
        await cache.set("k", cacheEntry("old"));
        clock.now += 6000;
        await cache.set("k", cacheEntry("new"));
        clock.now += 6000;
        assert.deepEqual(await cache.get("k"), { ...cacheEntry("new"), storedAtMs: 6000 });
      }));

    test("beyond the limit the oldest entry goes first; a rewrite makes an entry young", () =>
      withCache(0, { ttlSeconds: 900, maxEntries: 3 }, async ({ cache, size }, clock) => {
        for (const key of ["a", "b", "c"]) {
          await cache.set(key, cacheEntry(key));
          clock.now += 1000;
        }
        await cache.set("a", cacheEntry("a2"));
        await cache.set("d", cacheEntry("d"));
        assert.equal(await size(), 3);
        assert.equal(await cache.get("b"), null);
        assert.equal((await cache.get("a"))?.verdictJson, '{"verdict":"a2"}');
        assert.ok(await cache.get("c"));
        assert.ok(await cache.get("d"));
      }));

    test("writes drop expired entries, so the cache holds live ones only", () =>
      withCache(0, { ttlSeconds: 10, maxEntries: 100 }, async ({ cache, size }, clock) => {
        await cache.set("old", cacheEntry("x"));
        clock.now += 10_000;
        await cache.set("new", cacheEntry("y"));
        assert.equal(await size(), 1);
        assert.equal(await cache.get("old"), null);
      }));

    test("concurrent writes never leave more than the limit", () =>
      withCache(0, { ttlSeconds: 900, maxEntries: 5 }, async ({ cache, size }, clock) => {
        await Promise.all(
          Array.from({ length: 40 }, (_, index) => {
            clock.now = index;
            return cache.set(`k${index}`, cacheEntry(String(index)));
          }),
        );
        assert.equal(await size(), 5);
        const live = [];
        for (let index = 0; index < 40; index += 1) {
          if ((await cache.get(`k${index}`)) !== null) live.push(index);
        }
        assert.deepEqual(live, [35, 36, 37, 38, 39]);
      }));
  });
}
