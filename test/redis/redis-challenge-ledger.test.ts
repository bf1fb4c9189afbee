/** The distributed replay ledger: the shared contract, sharing between instances, failing closed. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { RedisChallengeLedger } from "../../src/redis/redis-challenge-ledger.js";
import { challengeLedgerContract } from "../access/evaluation/challenge-ledger-contract.js";
import { redisBackends } from "./cluster-support.js";
import {
  disposeTestRedis,
  openTestRedis,
  type PrivateRedis,
  startPrivateRedis,
} from "./support.js";

for (const backend of redisBackends()) {
  challengeLedgerContract(`RedisChallengeLedger on a ${backend.name}`, async () => {
    const connection = await backend.open();
    const ledger = new RedisChallengeLedger(connection);
    return {
      ledger,
      dispose: async () => {
        await ledger.close();
        await disposeTestRedis(connection);
      },
    };
  });
}

describe("RedisChallengeLedger", () => {
  test("a spent challenge is a key under the prefix that lives until its expiry", async () => {
    const connection = await openTestRedis();
    try {
      // The caller's clock, not Redis's, decides how long: a deployment clock a day off works.
      const clock = Date.now() - 86_400_000;
      const ledger = new RedisChallengeLedger(connection, () => clock);
      assert.equal(await ledger.spend("salt-1", clock + 300_000.5), true);
      const key = ledger.key("salt-1");
      assert.equal(key, `${connection.prefix}evaluation:challenge:{salt-1}`);
      const ttl = await connection.client.pttl(key);
      assert.ok(ttl > 0 && ttl <= 300_001, String(ttl));
      assert.equal(await ledger.spend("salt-1", clock + 300_000), false);
    } finally {
      await disposeTestRedis(connection);
    }
  });

  test("two instances share one ledger: spent on one is spent on the other", async () => {
    const first = await openTestRedis();
    const second = await openTestRedis(first.prefix);
    try {
      const inFiveMinutes = Date.now() + 300_000;
      assert.equal(await new RedisChallengeLedger(first).spend("shared", inFiveMinutes), true);
      assert.equal(await new RedisChallengeLedger(second).spend("shared", inFiveMinutes), false);
    } finally {
      await second.close();
      await disposeTestRedis(first);
    }
  });

  describe("while Redis is down", () => {
    let redis: PrivateRedis;
    before(async () => {
      redis = await startPrivateRedis();
    });
    after(() => redis.stop());

    test("spending rejects (never a silent true), and works again after", async () => {
      const connection = await openTestRedis(undefined, redis.url);
      try {
        const ledger = new RedisChallengeLedger(connection);
        const inFiveMinutes = Date.now() + 300_000;
        await redis.stop();
        await assert.rejects(ledger.spend("during-outage", inFiveMinutes));
        await redis.start();
        await connection.waitReady(10_000);
        assert.equal(await ledger.spend("during-outage", inFiveMinutes), true);
        assert.equal(await ledger.spend("during-outage", inFiveMinutes), false);
      } finally {
        await connection.close();
      }
    });
  });
});
