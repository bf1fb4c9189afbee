/** The distributed nonce ledger: the shared contract, sharing, and failing closed. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { RedisNonceLedger } from "../../src/redis/redis-nonce-ledger.js";
import { freshKey, nonceLedgerContract } from "../payments/nonce-ledger-contract.js";
import { redisBackends } from "./cluster-support.js";
import {
  disposeTestRedis,
  openTestRedis,
  type PrivateRedis,
  startPrivateRedis,
} from "./support.js";

for (const backend of redisBackends()) {
  nonceLedgerContract(`RedisNonceLedger on a ${backend.name}`, async () => {
    const connection = await backend.open();
    const ledger = new RedisNonceLedger(connection);
    return {
      ledger,
      dispose: async () => {
        await ledger.close();
        await disposeTestRedis(connection);
      },
    };
  });
}

describe("RedisNonceLedger", () => {
  test("a reservation is a key under the prefix that expires at expiresAtMs", async () => {
    const connection = await openTestRedis();
    try {
      const ledger = new RedisNonceLedger(connection);
      const key = freshKey();
      const expiresAt = Date.now() + 3_600_000;
      assert.equal(await ledger.reserve(key, expiresAt + 0.5), true);
      const id = ledger.key(key);
      assert.ok(id.startsWith(`${connection.prefix}x402:nonce:{eip155:8453:`));
      assert.equal(await connection.client.pexpiretime(id), expiresAt + 1);
    } finally {
      await disposeTestRedis(connection);
    }
  });

  test("two instances share one ledger: a reservation on one blocks the other", async () => {
    const first = await openTestRedis();
    const second = await openTestRedis(first.prefix);
    try {
      const key = freshKey();
      const inAnHour = Date.now() + 3_600_000;
      assert.equal(await new RedisNonceLedger(first).reserve(key, inAnHour), true);
      assert.equal(await new RedisNonceLedger(second).reserve(key, inAnHour), false);
      await new RedisNonceLedger(second).release(key);
      assert.equal(await new RedisNonceLedger(first).reserve(key, inAnHour), true);
    } finally {
      await second.close();
      await disposeTestRedis(first);
    }
  });

  test("an unusable expiry is refused", async () => {
    const connection = await openTestRedis();
    try {
      const ledger = new RedisNonceLedger(connection);
      await assert.rejects(ledger.reserve(freshKey(), Number.NaN), RangeError);
    } finally {
      await disposeTestRedis(connection);
    }
  });

  describe("while Redis is down", () => {
    let redis: PrivateRedis;
    before(async () => {
      redis = await startPrivateRedis();
    });
    after(() => redis.stop());

    test("reserve and release reject (never a silent true), and work again after", async () => {
      const connection = await openTestRedis(undefined, redis.url);
      try {
        const ledger = new RedisNonceLedger(connection);
        const key = freshKey();
        const inAnHour = Date.now() + 3_600_000;
        await redis.stop();
        await assert.rejects(ledger.reserve(key, inAnHour));
        await assert.rejects(ledger.release(key));
        await redis.start();
        await connection.waitReady(10_000);
        assert.equal(await ledger.reserve(key, inAnHour), true);
        assert.equal(await ledger.reserve(key, inAnHour), false);
      } finally {
        await connection.close();
      }
    });
  });
});
