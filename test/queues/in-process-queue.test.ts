/** The embedded `JobQueue` (queues/in-process-queue.ts) against the contract of job-queue.ts. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import { InProcessQueue } from "../../queues/in-process-queue.js";
import { JobFailedError, QueueClosedError } from "../../queues/job-queue.js";
import { gatedProcessor, jobQueueContract, NOW } from "./job-queue-contract.js";

jobQueueContract(
  "InProcessQueue",
  async (processor, options) => new InProcessQueue("test", processor, options),
);

describe("InProcessQueue", () => {
  test("the failure's cause is the processor's own error", async () => {
    const cause = new Error("disk full");
    const queue = new InProcessQueue<null, null>("test", async () => {
      throw cause;
    });
    await assert.rejects(
      queue.submit("job-a", null, NOW),
      (error: unknown) => error instanceof JobFailedError && error.cause === cause,
    );
    await queue.close();
  });

  test("at most `concurrency` jobs run at once; the others wait in order", async () => {
    const { processor, runs, gateFor } = gatedProcessor();
    const queue = new InProcessQueue("test", processor, { concurrency: 1 });
    const first = queue.submit("job-a", { n: 1 }, NOW);
    const second = queue.submit("job-b", { n: 2 }, NOW);
    const third = queue.submit("job-c", { n: 3 }, NOW);
    await nextTurn();
    assert.deepEqual(runs, ["job-a:1"]);
    gateFor("job-a").fail(new Error("boom"));
    await assert.rejects(first, JobFailedError);
    await nextTurn();
    assert.deepEqual(runs, ["job-a:1", "job-b:2"]);
    gateFor("job-b").open("b");
    gateFor("job-c").open("c");
    assert.equal((await second).state, "completed");
    assert.equal((await third).state, "completed");
    assert.deepEqual(runs, ["job-a:1", "job-b:2", "job-c:3"]);
    await queue.close();
  });

  test("close waits for accepted jobs, then refuses new ones", async () => {
    const { processor, gateFor } = gatedProcessor();
    const queue = new InProcessQueue("test", processor, { concurrency: 1 });
    const running = queue.submit("job-a", { n: 1 }, { waitMs: 0 });
    const waiting = queue.submit("job-b", { n: 2 }, { waitMs: 0 });
    // Both answer "pending" while their gates are shut; the jobs themselves carry on.
    assert.equal((await running).state, "pending");
    assert.equal((await waiting).state, "pending");
    let closed = false;
    const closing = queue.close().then(() => {
      closed = true;
    });
    await assert.rejects(queue.submit("job-c", { n: 3 }, NOW), QueueClosedError);
    await nextTurn();
    assert.equal(closed, false);
    gateFor("job-a").open("a");
    gateFor("job-b").open("b");
    await closing;
    // Completed work stays answerable after close; only new work is refused.
    assert.deepEqual(await queue.submit("job-b", { n: 2 }, NOW), {
      state: "completed",
      jobId: "job-b",
      result: "b",
    });
  });
});
