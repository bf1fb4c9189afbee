/** The embedded digest cache (the shared contract), and the cache key. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { digestCacheKey } from "../../src/cache/digest-cache.js";
import { MemoryDigestCache } from "../../src/cache/memory-digest-cache.js";
import { digestCacheContract } from "./digest-cache-contract.js";

digestCacheContract("MemoryDigestCache", async (limits, now) => {
  const cache = new MemoryDigestCache(limits, now);
  return { cache, size: async () => cache.size, dispose: () => cache.close() };
});

describe("digest cache key", () => {
  test("the key covers the raw bytes and require_anchor, nothing else", () => {
    const body = new TextEncoder().encode('{"a":1}');
    const spaced = new TextEncoder().encode('{"a": 1}');
    assert.equal(digestCacheKey(body, false), digestCacheKey(body, false));
    assert.notEqual(digestCacheKey(body, false), digestCacheKey(body, true));
    assert.notEqual(digestCacheKey(body, false), digestCacheKey(spaced, false));
    assert.match(digestCacheKey(body, true), /^[0-9a-f]{64}:anchor$/);
  });
});
