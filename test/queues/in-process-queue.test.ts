/** The embedded `JobQueue` (queues/in-process-queue.ts) against the contract of job-queue.ts. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import { InProcessQueue } from "../../queues/in-process-queue.js";
import { JobFailedError, type JsonData, QueueClosedError } from "../../queues/job-queue.js";

/** A promise the test settles by hand, so no assertion depends on timing. */
function gate<T = void>() {
  let open!: (value: T) => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** A queue whose processor records each run and waits for the test's go-ahead per job. */
function gatedQueue(options: { concurrency?: number; retainCompleted?: number } = {}) {
  const runs: string[] = [];
  const gates = new Map<string, ReturnType<typeof gate<JsonData>>>();
  const gateFor = (jobId: string) => {
    let jobGate = gates.get(jobId);
    if (jobGate === undefined) {
      jobGate = gate<JsonData>();
      gates.set(jobId, jobGate);
    }
    return jobGate;
  };
  const queue = new InProcessQueue<{ n: number }, JsonData>(
    "test",
    async (payload, jobId) => {
      runs.push(`${jobId}:${payload.n}`);
      return gateFor(jobId).promise;
    },
    options,
  );
  return { queue, runs, gateFor };
}

const NOW = { waitMs: 60_000 };

describe("InProcessQueue", () => {
  test("a job's result is what submit resolves with", async () => {
    const queue = new InProcessQueue<{ n: number }, { doubled: number }>("test", async (job) => ({
      doubled: job.n * 2,
    }));
    assert.deepEqual(await queue.submit("job-a", { n: 21 }, NOW), {
      state: "completed",
      jobId: "job-a",
      result: { doubled: 42 },
    });
    await queue.close();
  });

  test("the same id submitted while pending runs once; both callers get its result", async () => {
    const { queue, runs, gateFor } = gatedQueue();
    const first = queue.submit("job-a", { n: 1 }, NOW);
    const second = queue.submit("job-a", { n: 2 }, NOW);
    await nextTurn();
    gateFor("job-a").open("done");
    assert.deepEqual(await first, { state: "completed", jobId: "job-a", result: "done" });
    assert.deepEqual(await second, { state: "completed", jobId: "job-a", result: "done" });
    assert.deepEqual(runs, ["job-a:1"]);
    await queue.close();
  });

  test("a completed id is not run again while it is retained", async () => {
    const { queue, runs, gateFor } = gatedQueue({ retainCompleted: 1 });
    gateFor("job-a").open("a");
    gateFor("job-b").open("b");
    await queue.submit("job-a", { n: 1 }, NOW);
    assert.deepEqual(await queue.submit("job-a", { n: 2 }, NOW), {
      state: "completed",
      jobId: "job-a",
      result: "a",
    });
    assert.deepEqual(runs, ["job-a:1"]);
    // Retention is bounded: once job-b is remembered, job-a is forgotten and runs again.
    await queue.submit("job-b", { n: 3 }, NOW);
    await queue.submit("job-a", { n: 4 }, NOW);
    assert.deepEqual(runs, ["job-a:1", "job-b:3", "job-a:4"]);
    await queue.close();
  });

  test("with retainCompleted 0 only pending jobs are deduplicated", async () => {
    const { queue, runs, gateFor } = gatedQueue({ retainCompleted: 0 });
    gateFor("job-a").open("a");
    await queue.submit("job-a", { n: 1 }, NOW);
    await queue.submit("job-a", { n: 2 }, NOW);
    assert.deepEqual(runs, ["job-a:1", "job-a:2"]);
    await queue.close();
  });

  test("a failed job rejects with JobFailedError and its id can be submitted again", async () => {
    let attempts = 0;
    const cause = new Error("disk full");
    const queue = new InProcessQueue<null, string>("test", async () => {
      attempts += 1;
      if (attempts === 1) throw cause;
      return "stored";
    });
    const failure = await queue.submit("job-a", null, NOW).then(
      () => assert.fail("the job should have failed"),
      (error: unknown) => error,
    );
    assert.ok(failure instanceof JobFailedError);
    assert.equal(failure.message, "disk full");
    assert.equal(failure.queue, "test");
    assert.equal(failure.jobId, "job-a");
    assert.equal(failure.cause, cause);
    assert.deepEqual(await queue.submit("job-a", null, NOW), {
      state: "completed",
      jobId: "job-a",
      result: "stored",
    });
    assert.equal(attempts, 2);
    await queue.close();
  });

  test("a job not done within waitMs is reported pending and still completes", async () => {
    const { queue, runs, gateFor } = gatedQueue();
    assert.deepEqual(await queue.submit("job-a", { n: 1 }, { waitMs: 0 }), {
      state: "pending",
      jobId: "job-a",
    });
    gateFor("job-a").open("late");
    assert.deepEqual(await queue.submit("job-a", { n: 2 }, NOW), {
      state: "completed",
      jobId: "job-a",
      result: "late",
    });
    assert.deepEqual(runs, ["job-a:1"]);
    await queue.close();
  });

  test("at most `concurrency` jobs run at once; the others wait in order", async () => {
    const { queue, runs, gateFor } = gatedQueue({ concurrency: 1 });
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
    const { queue, gateFor } = gatedQueue({ concurrency: 1 });
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

  test("job ids follow BullMQ's rules in every mode", async () => {
    const queue = new InProcessQueue<null, null>("test", async () => null);
    for (const jobId of ["", "sha256:abc", "12345"]) {
      await assert.rejects(queue.submit(jobId, null, NOW), RangeError, JSON.stringify(jobId));
    }
    assert.equal((await queue.submit("anchor-12345", null, NOW)).state, "completed");
    await queue.close();
  });
});
