/** The embedded digest cache: TTL, the entry limit, oldest-first eviction. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { digestCacheKey } from "../../src/cache/digest-cache.js";
import { MemoryDigestCache } from "../../src/cache/memory-digest-cache.js";

const entry = (verdict: string) => ({
  verdictJson: `{"verdict":"${verdict}"}`,
  receipt: { error: "none" },
  verifiedAt: "2026-11-21T00:00:00Z",
});

function cacheAt(start: number, limits = { ttlSeconds: 900, maxEntries: 3 }) {
  const clock = { now: start };
  return { clock, cache: new MemoryDigestCache(limits, () => clock.now) };
}

describe("MemoryDigestCache", () => {
  test("an entry lives for exactly the TTL", async () => {
    const { clock, cache } = cacheAt(1_000_000);
    await cache.set("k", entry("TRUSTED"));
    clock.now += 899_999;
    assert.equal((await cache.get("k"))?.verdictJson, '{"verdict":"TRUSTED"}');
    assert.equal((await cache.get("k"))?.storedAtMs, 1_000_000);
    clock.now += 1;
    assert.equal(await cache.get("k"), null);
    assert.equal(cache.size, 0);
  });

  test("beyond the limit the oldest entry goes first; a rewrite makes an entry young", async () => {
    const { clock, cache } = cacheAt(0);
    for (const key of ["a", "b", "c"]) {
      await cache.set(key, entry(key));
      clock.now += 1000;
    }
    await cache.set("a", entry("a2"));
    await cache.set("d", entry("d"));
    assert.equal(cache.size, 3);
    assert.equal(await cache.get("b"), null);
    assert.equal((await cache.get("a"))?.verdictJson, '{"verdict":"a2"}');
    assert.ok(await cache.get("c"));
    assert.ok(await cache.get("d"));
  });

  test("writes drop expired entries, so memory holds live ones only", async () => {
    const { clock, cache } = cacheAt(0, { ttlSeconds: 10, maxEntries: 100 });
    await cache.set("old", entry("x"));
    clock.now += 10_000;
    await cache.set("new", entry("y"));
    assert.equal(cache.size, 1);
  });

  test("the key covers the raw bytes and require_anchor, nothing else", () => {
    const body = new TextEncoder().encode('{"a":1}');
    const spaced = new TextEncoder().encode('{"a": 1}');
    assert.equal(digestCacheKey(body, false), digestCacheKey(body, false));
    assert.notEqual(digestCacheKey(body, false), digestCacheKey(body, true));
    assert.notEqual(digestCacheKey(body, false), digestCacheKey(spaced, false));
    assert.match(digestCacheKey(body, true), /^[0-9a-f]{64}:anchor$/);
  });
});
