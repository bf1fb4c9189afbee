/**
 * Distributed mode's idempotency entries (src/redis/redis-idempotency-store.ts): claim, answer
 * and replay, and the per-owner share that bounds what one principal keeps in Redis (issue
 * 34's attack: 256 KiB answers kept 24 h, unbounded per principal), on a single Redis and on a
 * cluster (an owner's entries and ledger share one hash tag).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StoredAnswer } from "../../src/access/idempotency-store.js";
import { RedisIdempotencyStore } from "../../src/redis/redis-idempotency-store.js";
import { redisBackends } from "./cluster-support.js";
import { disposeTestRedis } from "./support.js";

function answerOf(bytes: number): StoredAnswer {
  return {
    status: 200,
    headers: { "content-type": "application/json" },
    body: Buffer.alloc(bytes, 97),
  };
}

for (const backend of redisBackends()) {
  describe(`RedisIdempotencyStore on a ${backend.name}`, () => {
    test("a kept answer is replayed; a released claim lets the key run again", async () => {
      const connection = await backend.open();
      try {
        const store = new RedisIdempotencyStore(connection);
        const begun = await store.begin("e1", "f", "owner-a");
        assert.equal(begun.state, "claimed");
        assert.deepEqual(await store.begin("e1", "f", "owner-a"), {
          state: "in_flight",
          fingerprint: "f",
        });
        if (begun.state !== "claimed") return;
        await store.complete("e1", begun.claim, "f", answerOf(10), "owner-a");
        const replay = await store.begin("e1", "f", "owner-a");
        assert.equal(replay.state, "answered");
        if (replay.state === "answered") assert.equal(replay.answer.body.length, 10);

        const second = await store.begin("e2", "f", "owner-a");
        if (second.state !== "claimed") throw new Error("e2 should be claimable");
        await store.release("e2", second.claim, "owner-a");
        assert.equal((await store.begin("e2", "f", "owner-a")).state, "claimed");
      } finally {
        await disposeTestRedis(connection);
      }
    });

    test("one owner's answers past its share push out its own oldest, never another's", async () => {
      const connection = await backend.open();
      try {
        // A share of 3 answers of 1,000 bytes (about 1,400 stored, base64 and members).
        const store = new RedisIdempotencyStore(connection, { maxBytesPerOwner: 4_500 });
        async function keep(owner: string, entry: string): Promise<void> {
          const begun = await store.begin(entry, "f", owner);
          if (begun.state !== "claimed") throw new Error(`${entry} was not claimable`);
          await store.complete(entry, begun.claim, "f", answerOf(1_000), owner);
        }
        await keep("honest", "h1");
        for (let i = 0; i < 10; i += 1) await keep("flooder", `f${i}`);
        const states = async (owner: string, entries: string[]) =>
          Promise.all(entries.map(async (entry) => (await store.begin(entry, "f", owner)).state));
        // The flooder keeps only its newest three; its older keys run again (claimed now).
        assert.deepEqual(await states("flooder", ["f9", "f8", "f7"]), [
          "answered",
          "answered",
          "answered",
        ]);
        assert.equal((await store.begin("f0", "f", "flooder")).state, "claimed");
        // The honest owner's answer is still there.
        assert.equal((await store.begin("h1", "f", "honest")).state, "answered");
      } finally {
        await disposeTestRedis(connection);
      }
    });

    test("an answer larger than the whole share is sent but not kept", async () => {
      const connection = await backend.open();
      try {
        const store = new RedisIdempotencyStore(connection, { maxBytesPerOwner: 2_000 });
        const begun = await store.begin("big", "f", "owner-b");
        if (begun.state !== "claimed") throw new Error("not claimable");
        await store.complete("big", begun.claim, "f", answerOf(5_000), "owner-b");
        assert.equal((await store.begin("big", "f", "owner-b")).state, "claimed");
      } finally {
        await disposeTestRedis(connection);
      }
    });

    test("entries per owner are bounded too", async () => {
      const connection = await backend.open();
      try {
        const store = new RedisIdempotencyStore(connection, { maxEntriesPerOwner: 2 });
        for (const entry of ["a", "b", "c"]) {
          const begun = await store.begin(entry, "f", "owner-c");
          if (begun.state !== "claimed") throw new Error("not claimable");
          await store.complete(entry, begun.claim, "f", answerOf(1), "owner-c");
        }
        assert.equal((await store.begin("a", "f", "owner-c")).state, "claimed");
        assert.equal((await store.begin("c", "f", "owner-c")).state, "answered");
      } finally {
        await disposeTestRedis(connection);
      }
    });
  });
}
