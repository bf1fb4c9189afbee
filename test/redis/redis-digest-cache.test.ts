/** The distributed digest cache: the shared contract, its Redis layout, and sharing. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RedisDigestCache } from "../../src/redis/redis-digest-cache.js";
import { cacheEntry, digestCacheContract } from "../cache/digest-cache-contract.js";
import { redisBackends } from "./cluster-support.js";
import { disposeTestRedis, keysUnder, openTestRedis } from "./support.js";

for (const backend of redisBackends()) {
  digestCacheContract(`RedisDigestCache on a ${backend.name}`, async (limits, now) => {
    const connection = await backend.open();
    const cache = new RedisDigestCache(connection, limits, now);
    return {
      cache,
      size: () => cache.size(),
      dispose: async () => {
        await cache.close();
        await disposeTestRedis(connection);
      },
    };
  });
}

describe("RedisDigestCache", () => {
  test("entries and the index carry a Redis TTL, so an idle cache leaves nothing", async () => {
    const connection = await openTestRedis();
    try {
      const cache = new RedisDigestCache(connection, { ttlSeconds: 900, maxEntries: 256 });
      await cache.set("abc:any", cacheEntry("TRUSTED"));
      const { prefix, client } = connection;
      assert.deepEqual((await keysUnder(client, prefix)).sort(), [
        `${prefix}cache:{digests}:entry:abc:any`,
        `${prefix}cache:{digests}:index`,
      ]);
      for (const key of [
        `${prefix}cache:{digests}:entry:abc:any`,
        `${prefix}cache:{digests}:index`,
      ]) {
        const ttl = await client.pttl(key);
        assert.ok(ttl > 890_000 && ttl <= 900_000, `${key}: ${ttl}`);
      }
    } finally {
      await disposeTestRedis(connection);
    }
  });

  test("two instances see each other's entries and share one limit", async () => {
    const first = await openTestRedis();
    const second = await openTestRedis(first.prefix);
    try {
      const clock = { now: 1_000_000 };
      const limits = { ttlSeconds: 900, maxEntries: 2 };
      const one = new RedisDigestCache(first, limits, () => clock.now);
      const two = new RedisDigestCache(second, limits, () => clock.now);
      await one.set("a", cacheEntry("a"));
      clock.now += 5000;
      assert.deepEqual(await two.get("a"), { ...cacheEntry("a"), storedAtMs: 1_000_000 });
      await two.set("b", cacheEntry("b"));
      clock.now += 1000;
      await two.set("c", cacheEntry("c"));
      assert.equal(await one.get("a"), null);
      assert.equal((await one.get("b"))?.verdictJson, '{"verdict":"b"}');
      assert.equal((await one.get("c"))?.storedAtMs, 1_006_000);
      assert.equal(await one.size(), 2);
    } finally {
      await second.close();
      await disposeTestRedis(first);
    }
  });

  test("a malformed entry is an error (the route treats it as a miss)", async () => {
    const connection = await openTestRedis();
    try {
      const cache = new RedisDigestCache(connection, { ttlSeconds: 900, maxEntries: 2 });
      await connection.client.set(`${connection.prefix}cache:{digests}:entry:bad`, "{not json");
      await assert.rejects(cache.get("bad"), /malformed digest cache entry/);
    } finally {
      await disposeTestRedis(connection);
    }
  });

  test("unusable limits are refused", async () => {
    const connection = await openTestRedis();
    try {
      assert.throws(() => new RedisDigestCache(connection, { ttlSeconds: 0, maxEntries: 2 }));
      assert.throws(() => new RedisDigestCache(connection, { ttlSeconds: 9, maxEntries: -1 }));
    } finally {
      await disposeTestRedis(connection);
    }
  });
});
