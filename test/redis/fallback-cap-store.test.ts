/** Caps keep working while Redis is down: memory counting, logged once per outage. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CapDecision, CapStore } from "../../src/access/caps.js";
import { MemoryCapStore } from "../../src/access/memory-cap-store.js";
import type { RedisConnection } from "../../src/redis/connection.js";
import { FallbackCapStore } from "../../src/redis/fallback-cap-store.js";
import { RedisCapStore } from "../../src/redis/redis-cap-store.js";
import { at, capStoreContract } from "../access/cap-store-contract.js";
import { openTestRedis, type PrivateRedis, startPrivateRedis } from "./support.js";

/** A primary that counts in memory, or throws while `down`. */
class StubPrimary implements CapStore {
  down = false;
  calls = 0;
  closed = false;
  readonly #counts = new MemoryCapStore();

  async consume(bucket: string, limit: number, nowMs?: number): Promise<CapDecision> {
    this.calls += 1;
    if (this.down) throw new Error("ECONNREFUSED");
    return this.#counts.consume(bucket, limit, nowMs);
  }

  async refund(bucket: string, nowMs: number): Promise<void> {
    if (this.down) throw new Error("ECONNREFUSED");
    return this.#counts.refund(bucket, nowMs);
  }

  async count(bucket: string, nowMs: number): Promise<number> {
    if (this.down) throw new Error("ECONNREFUSED");
    return this.#counts.count(bucket, nowMs);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

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

const NOON = at("2026-11-21T12:00:00Z");

capStoreContract("FallbackCapStore (healthy primary)", async () => {
  const store = new FallbackCapStore(new MemoryCapStore());
  return { store, dispose: () => store.close() };
});

capStoreContract("FallbackCapStore (primary down)", async () => {
  const primary = new StubPrimary();
  primary.down = true;
  const store = new FallbackCapStore(primary);
  return { store, dispose: () => store.close() };
});

describe("FallbackCapStore", () => {
  test("counts in memory while the primary throws, logging the outage once", async () => {
    const primary = new StubPrimary();
    const { lines, log } = recordingLog();
    const monotonic = { now: 0 };
    const store = new FallbackCapStore(primary, {
      log,
      monotonicNow: () => monotonic.now,
      retryAfterMs: 1000,
    });
    assert.equal((await store.consume("anonymous", 3, NOON)).remaining, 2);
    primary.down = true;
    const during = [];
    for (let i = 0; i < 4; i += 1) during.push(await store.consume("anonymous", 3, NOON));
    // Memory starts from zero: the outage's own count is what the cap applies to.
    assert.deepEqual(
      during.map((decision) => [decision.allowed, decision.remaining]),
      [
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ],
    );
    assert.equal(store.degraded, true);
    assert.deepEqual(lines, [
      "warn: cap store unreachable; counting daily caps in this process until it returns",
    ]);
    // Within the retry window the primary is not asked again.
    assert.equal(primary.calls, 2);
  });

  test("tries the primary again after the retry window and goes back to it", async () => {
    const primary = new StubPrimary();
    const { lines, log } = recordingLog();
    const monotonic = { now: 0 };
    const store = new FallbackCapStore(primary, {
      log,
      monotonicNow: () => monotonic.now,
      retryAfterMs: 1000,
    });
    primary.down = true;
    await store.consume("anonymous", 10, NOON);
    monotonic.now = 999;
    await store.consume("anonymous", 10, NOON);
    assert.equal(primary.calls, 1);
    monotonic.now = 1000;
    await store.consume("anonymous", 10, NOON);
    assert.equal(primary.calls, 2);
    primary.down = false;
    monotonic.now = 2000;
    assert.deepEqual(await store.consume("anonymous", 10, NOON), {
      allowed: true,
      limit: 10,
      remaining: 9,
      resetSeconds: 43_200,
    });
    assert.equal(store.degraded, false);
    await store.consume("anonymous", 10, NOON);
    assert.equal(primary.calls, 4);
    assert.deepEqual(lines, [
      "warn: cap store unreachable; counting daily caps in this process until it returns",
      "info: daily caps are shared again (the cap store is reachable)",
    ]);
  });

  test("concurrent failures log one warning", async () => {
    const primary = new StubPrimary();
    primary.down = true;
    const { lines, log } = recordingLog();
    const store = new FallbackCapStore(primary, { log });
    const decisions = await Promise.all(
      Array.from({ length: 10 }, () => store.consume("anonymous", 4, NOON)),
    );
    assert.equal(decisions.filter((decision) => decision.allowed).length, 4);
    assert.equal(lines.length, 1);
  });

  test("a bad cap is refused without touching the primary", async () => {
    const primary = new StubPrimary();
    const store = new FallbackCapStore(primary);
    await assert.rejects(store.consume("anonymous", -1, NOON), RangeError);
    assert.equal(primary.calls, 0);
    assert.equal(store.degraded, false);
  });

  test("close closes the primary", async () => {
    const primary = new StubPrimary();
    await new FallbackCapStore(primary).close();
    assert.equal(primary.closed, true);
  });

  describe("over a real Redis that dies and comes back", () => {
    let redis: PrivateRedis;
    let connection: RedisConnection;
    before(async () => {
      redis = await startPrivateRedis();
      connection = await openTestRedis(undefined, redis.url);
    });
    after(async () => {
      await connection.close();
      await redis.stop();
    });

    test("keeps answering through the outage and shares counts again after it", async () => {
      const { lines, log } = recordingLog();
      const monotonic = { now: 0 };
      const store = new FallbackCapStore(new RedisCapStore(connection), {
        log,
        monotonicNow: () => monotonic.now,
      });
      assert.equal((await store.consume("key:outage", 5, NOON)).remaining, 4);
      await redis.stop();
      assert.deepEqual(await store.consume("key:outage", 5, NOON), {
        allowed: true,
        limit: 5,
        remaining: 4,
        resetSeconds: 43_200,
      });
      assert.equal(store.degraded, true);
      await redis.start();
      await connection.waitReady(10_000);
      // The process's circuit breaker sends nothing until its probe has found Redis again.
      const deadline = Date.now() + 10_000;
      while (connection.breaker.state === "open") {
        assert.ok(Date.now() < deadline, "the circuit never closed");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      monotonic.now = 1000;
      // The restarted Redis is empty (no persistence): the shared count starts again.
      assert.equal((await store.consume("key:outage", 5, NOON)).remaining, 4);
      assert.equal(store.degraded, false);
      assert.deepEqual(lines, [
        "warn: cap store unreachable; counting daily caps in this process until it returns",
        "info: daily caps are shared again (the cap store is reachable)",
      ]);
    });
  });
});
