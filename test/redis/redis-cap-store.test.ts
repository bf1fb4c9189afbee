/** The distributed cap store: the shared contract, its keys, and two instances sharing it. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RedisCapStore } from "../../src/redis/redis-cap-store.js";
import { at, capStoreContract } from "../access/cap-store-contract.js";
import { redisBackends } from "./cluster-support.js";
import { disposeTestRedis, keysUnder, openTestRedis } from "./support.js";

for (const backend of redisBackends()) {
  capStoreContract(`RedisCapStore on a ${backend.name}`, async () => {
    const connection = await backend.open();
    const store = new RedisCapStore(connection);
    return {
      store,
      dispose: async () => {
        await store.close();
        await disposeTestRedis(connection);
      },
    };
  });
}

describe("RedisCapStore", () => {
  test("one key per bucket and UTC day, kept until an hour past that day's midnight", async () => {
    const connection = await openTestRedis();
    try {
      const store = new RedisCapStore(connection);
      const now = at("2026-11-21T18:00:00Z");
      await store.consume("key:0123456789ab", 5, now);
      await store.consume("key:0123456789ab", 5, at("2026-11-22T01:00:00Z"));
      await store.consume("anonymous", 0, now);
      const day = Math.floor(now / 86_400_000);
      assert.deepEqual((await keysUnder(connection.client, connection.prefix)).sort(), [
        `${connection.prefix}cap:{key:0123456789ab:${day}}`,
        `${connection.prefix}cap:{key:0123456789ab:${day + 1}}`,
      ]);
      const ttl = await connection.client.pttl(`${connection.prefix}cap:{key:0123456789ab:${day}}`);
      // Six hours to midnight plus the hour of grace, less the time the test took.
      assert.ok(ttl > 7 * 3_600_000 - 60_000 && ttl <= 7 * 3_600_000, String(ttl));
    } finally {
      await disposeTestRedis(connection);
    }
  });

  test("uses its injected clock when no instant is given", async () => {
    const connection = await openTestRedis();
    try {
      const clock = { now: at("2026-11-21T23:59:59Z") };
      const store = new RedisCapStore(connection, () => clock.now);
      assert.equal((await store.consume("anonymous", 1)).resetSeconds, 1);
      assert.equal((await store.consume("anonymous", 1)).allowed, false);
      clock.now = at("2026-11-22T00:00:01Z");
      assert.deepEqual(await store.consume("anonymous", 1), {
        allowed: true,
        limit: 1,
        remaining: 0,
        resetSeconds: 86_399,
      });
    } finally {
      await disposeTestRedis(connection);
    }
  });

  test("two instances on one prefix reach the cap at the same total count", async () => {
    const first = await openTestRedis();
    const second = await openTestRedis(first.prefix);
    try {
      const stores = [new RedisCapStore(first), new RedisCapStore(second)];
      const now = at("2026-11-21T10:00:00Z");
      const decisions = await Promise.all(
        Array.from({ length: 30 }, (_, index) => stores[index % 2]!.consume("key:shared", 12, now)),
      );
      assert.equal(decisions.filter((decision) => decision.allowed).length, 12);
      assert.equal((await stores[0]!.consume("key:shared", 12, now)).allowed, false);
      assert.equal((await stores[1]!.consume("key:shared", 12, now)).allowed, false);
      assert.deepEqual(await stores[1]!.consume("key:shared", 13, now), {
        allowed: true,
        limit: 13,
        remaining: 0,
        resetSeconds: 50_400,
      });
    } finally {
      await second.close();
      await disposeTestRedis(first);
    }
  });

  test("different prefixes do not share counters", async () => {
    const first = await openTestRedis();
    const second = await openTestRedis();
    try {
      const now = at("2026-11-21T10:00:00Z");
      assert.equal((await new RedisCapStore(first).consume("anonymous", 1, now)).allowed, true);
      assert.equal((await new RedisCapStore(second).consume("anonymous", 1, now)).allowed, true);
    } finally {
      await disposeTestRedis(first);
      await disposeTestRedis(second);
    }
  });
});
