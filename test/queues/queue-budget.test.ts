/**
 * A queue's byte budget in Redis (queues/queue-budget.ts), on the shared Redis under a private
 * prefix: the share and the budget refuse before anything is charged, a release happens once
 * per admission, and the reconciler gives back what a crash left charged.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ADMISSION_GRACE_MS, QueueBudget, QueueFullError } from "../../queues/queue-budget.js";
import { disposeTestRedis, openTestRedis } from "../redis/support.js";

describe("QueueBudget", () => {
  let connection: Awaited<ReturnType<typeof openTestRedis>>;
  let queueNumber = 0;
  /** A fresh queue name per test: 1,000 bytes of budget, 40% (400 bytes) per principal. */
  const budget = () => {
    queueNumber += 1;
    return new QueueBudget(connection.client, connection.prefix, `q${queueNumber}`, {
      budgetBytes: 1000,
      sharePercent: 40,
    });
  };

  before(async () => {
    connection = await openTestRedis();
  });
  after(async () => {
    await disposeTestRedis(connection);
  });

  test("a principal past its share is refused while another is still admitted", async () => {
    const queue = budget();
    assert.equal(await queue.admit("a1", "key:a", 300), "admitted");
    await assert.rejects(queue.admit("a2", "key:a", 200), (error: unknown) => {
      assert.ok(error instanceof QueueFullError);
      assert.equal(error.bound, "share");
      assert.equal(error.heldBytes, 300);
      assert.equal(error.limitBytes, 400);
      return true;
    });
    assert.equal(await queue.admit("b1", "key:b", 400), "admitted");
    assert.equal(await queue.principalBytes("key:a"), 300);
    assert.equal(await queue.heldBytes(), 700);
  });

  test("the queue's budget refuses whoever would pass it; a refusal charges nothing", async () => {
    const queue = budget();
    await queue.admit("a", "key:a", 400);
    await queue.admit("b", "key:b", 400);
    await assert.rejects(queue.admit("c", "key:c", 300), (error: unknown) => {
      assert.ok(error instanceof QueueFullError);
      assert.equal(error.bound, "budget");
      assert.equal(error.heldBytes, 800);
      assert.equal(error.limitBytes, 1000);
      return true;
    });
    assert.equal(await queue.heldBytes(), 800);
    assert.equal(await queue.principalBytes("key:c"), 0);
    // The service's own jobs (a paid call's receipt) are counted, never refused.
    assert.equal(await queue.admit("s", "service", 300, false), "admitted");
    assert.equal(await queue.heldBytes(), 1100);
  });

  test("a job id already admitted is held by its first admission, and released once", async () => {
    const queue = budget();
    assert.equal(await queue.admit("same", "key:a", 100), "admitted");
    assert.equal(await queue.admit("same", "key:b", 100), "held");
    assert.equal(await queue.heldBytes(), 100);
    assert.equal(await queue.release("same"), 100);
    assert.equal(await queue.release("same"), 0);
    assert.equal(await queue.heldBytes(), 0);
    assert.equal(await queue.principalBytes("key:a"), 0);
    assert.deepEqual(await connection.client.hgetall(`${connection.prefix}budget:{q3}:bytes`), {});
  });

  test("the reconciler releases jobs no longer live, past the admission grace", async () => {
    const queue = budget();
    const now = Date.now();
    await queue.admit("gone", "key:a", 100, true, now - ADMISSION_GRACE_MS - 1);
    await queue.admit("live", "key:a", 50, true, now - ADMISSION_GRACE_MS - 1);
    // Admitted a moment ago: its add may still be on its way.
    await queue.admit("young", "key:b", 70, true, now);
    // A counter off by a crash between a ledger write and its counters is set right too.
    await connection.client.hincrby(`${connection.prefix}budget:{q4}:bytes`, "total", 999);
    const released = await queue.reconcile(async (jobId) => jobId === "live", now);
    assert.equal(released, 100);
    assert.equal(await queue.heldBytes(), 120);
    assert.equal(await queue.principalBytes("key:a"), 50);
    assert.deepEqual((await queue.ledger()).map((entry) => entry.jobId).sort(), ["live", "young"]);
  });
});
