/** The Redis connection: fail fast, log outages once, reconnect in the background. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { normalisePrefix, openRedis } from "../../src/redis/connection.js";
import { RedisCapStore } from "../../src/redis/redis-cap-store.js";
import { at } from "../access/cap-store-contract.js";
import { openClusterRedis, startTestCluster, type TestCluster } from "./cluster-support.js";
import {
  disposeTestRedis,
  openTestRedis,
  type PrivateRedis,
  randomPrefix,
  startPrivateRedis,
} from "./support.js";

function recordingLog() {
  const lines: string[] = [];
  return {
    lines,
    log: {
      warn: (message: string) => lines.push(`warn: ${message}`),
      info: (message: string) => lines.push(`info: ${message}`),
    },
  };
}

describe("Redis connection", () => {
  test("the prefix always ends in a colon", async () => {
    assert.equal(normalisePrefix("receiptd"), "receiptd:");
    assert.equal(normalisePrefix("receiptd:"), "receiptd:");
    assert.equal(normalisePrefix(""), "");
    const connection = await openTestRedis("receiptd-test-abc");
    try {
      assert.equal(connection.prefix, "receiptd-test-abc:");
    } finally {
      await disposeTestRedis(connection);
    }
  });

  test("ping answers up on the shared Redis; close is idempotent", async () => {
    const connection = await openTestRedis();
    assert.equal(await connection.ping(), "up");
    await disposeTestRedis(connection);
    await connection.close();
    assert.equal(await connection.ping(), "down");
  });

  test("a Redis that never answers: commands fail, ready times out, ping is down", async () => {
    // Port 1 on loopback refuses connections.
    const { lines, log } = recordingLog();
    const connection = openRedis({ url: "redis://127.0.0.1:1", prefix: randomPrefix(), log });
    try {
      await assert.rejects(connection.waitReady(300), /not ready within 300 ms/);
      assert.equal(await connection.ping(), "down");
      await assert.rejects(new RedisCapStore(connection).consume("anonymous", 1));
      assert.deepEqual(lines, [
        "warn: redis unavailable (ECONNREFUSED); retrying in the background",
      ]);
    } finally {
      await connection.close();
    }
  });

  describe("on a private Redis", () => {
    let redis: PrivateRedis;
    before(async () => {
      redis = await startPrivateRedis();
    });
    after(() => redis.stop());

    test("a hung Redis fails commands at the command timeout instead of hanging", async () => {
      const connection = await openTestRedis(undefined, redis.url, { commandTimeoutMs: 200 });
      try {
        const store = new RedisCapStore(connection);
        redis.pause();
        await assert.rejects(
          store.consume("anonymous", 1, at("2026-11-21T10:00:00Z")),
          /Command timed out/,
        );
        // The timeout opened the circuit: ping answers down at once, without sending.
        assert.equal(connection.breaker.state, "open");
        assert.equal(await connection.ping(), "down");
        redis.resume();
        // Closed by the breaker's probe, in the background, once Redis answers again.
        await untilUp(connection);
      } finally {
        redis.resume();
        await connection.close();
      }
    });

    test("an outage is logged once when it starts and once when it ends", async () => {
      const { lines, log } = recordingLog();
      const connection = openRedis({ url: redis.url, prefix: randomPrefix(), log });
      try {
        await connection.waitReady();
        await redis.stop();
        assert.equal(await connection.ping(), "down");
        assert.equal(await connection.ping(), "down");
        await redis.start();
        await connection.waitReady(10_000);
        await untilUp(connection);
        // Whether the kill surfaces as a reset or a plain close is up to the kernel.
        assert.equal(lines.length, 2, lines.join("\n"));
        assert.match(
          lines[0]!,
          /^warn: redis unavailable \((ECONNRESET|ECONNREFUSED|connection closed)\); retrying/,
        );
        assert.equal(lines[1], "info: redis available again");
      } finally {
        await connection.close();
      }
      // Closing on purpose is not an outage.
      assert.equal(lines.length, 2);
    });
  });
});

describe("Redis connection on a Redis Cluster (issue 36)", () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startTestCluster({ own: true });
  });
  after(() => cluster.stop());

  test("a silent master fails its commands at the command timeout and opens the circuit", async () => {
    const connection = await openClusterRedis(cluster, undefined, { commandTimeoutMs: 200 });
    const store = new RedisCapStore(connection);
    const bucket = "anonymous";
    const master = await cluster.masterOf(store.key(bucket, at("2026-11-21T10:00:00Z")));
    try {
      cluster.pause(master.port);
      await assert.rejects(
        store.consume(bucket, 1, at("2026-11-21T10:00:00Z")),
        /Command timed out/,
      );
      // The commands of every slot are refused unsent now, the other masters' included: one
      // breaker per process, as on a single Redis.
      assert.equal(connection.breaker.state, "open");
      await assert.rejects(store.consume("key:other", 1, at("2026-11-21T10:00:00Z")), {
        name: "RedisCircuitOpenError",
      });
      // The probe PINGs every master: it fails while one is silent.
      assert.equal(await connection.ping(), "down");
      cluster.resume(master.port);
      await untilUp(connection);
      assert.equal((await store.consume(bucket, 5, at("2026-11-21T10:00:00Z"))).allowed, true);
    } finally {
      cluster.resume(master.port);
      await disposeTestRedis(connection);
    }
  });
});

/** Waits (at most 10 s) for the breaker's probe to find Redis answering again. */
async function untilUp(connection: { ping(): Promise<string> }): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await connection.ping()) !== "up") {
    assert.ok(Date.now() < deadline, "redis never answered up again");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
