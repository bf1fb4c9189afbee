/**
 * The behaviour every `JobQueue` (queues/job-queue.ts) must show, embedded or distributed. Each
 * implementation's test file runs `jobQueueContract` with a factory of fresh queues whose jobs
 * run `processor` (for BullMQ: on a worker in the test process).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import {
  JobFailedError,
  type JobProcessor,
  type JobQueue,
  type JsonData,
  QueueClosedError,
} from "../../queues/job-queue.js";

export type QueueFactory = <Payload extends JsonData, Result extends JsonData>(
  processor: JobProcessor<Payload, Result>,
  options?: { retainCompleted?: number },
) => Promise<JobQueue<Payload, Result>>;

/** A promise the test settles by hand, so no assertion depends on timing. */
export function gate<T = void>() {
  let open!: (value: T) => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** A processor that records each run and waits for the test's go-ahead per job. */
export function gatedProcessor() {
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
  const processor: JobProcessor<{ n: number }, JsonData> = async (payload, jobId) => {
    runs.push(`${jobId}:${payload.n}`);
    return gateFor(jobId).promise;
  };
  return { processor, runs, gateFor };
}

export const NOW = { waitMs: 60_000 };

export function jobQueueContract(label: string, newQueue: QueueFactory): void {
  describe(`JobQueue contract: ${label}`, () => {
    test("a job's result is what submit resolves with", async () => {
      const queue = await newQueue<{ n: number }, { doubled: number }>(async (job) => ({
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
      const { processor, runs, gateFor } = gatedProcessor();
      const queue = await newQueue(processor);
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
      const { processor, runs, gateFor } = gatedProcessor();
      const queue = await newQueue(processor, { retainCompleted: 1 });
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
      const { processor, runs, gateFor } = gatedProcessor();
      const queue = await newQueue(processor, { retainCompleted: 0 });
      gateFor("job-a").open("a");
      await queue.submit("job-a", { n: 1 }, NOW);
      await queue.submit("job-a", { n: 2 }, NOW);
      assert.deepEqual(runs, ["job-a:1", "job-a:2"]);
      await queue.close();
    });

    test("a failed job rejects with JobFailedError and its id can be submitted again", async () => {
      const runs: boolean[] = [];
      const queue = await newQueue<{ fail: boolean }, string>(async (job) => {
        runs.push(job.fail);
        if (job.fail) throw new Error("disk full");
        return "stored";
      });
      const failure = await queue.submit("job-a", { fail: true }, NOW).then(
        () => assert.fail("the job should have failed"),
        (error: unknown) => error,
      );
      assert.ok(failure instanceof JobFailedError);
      assert.equal(failure.message, "disk full");
      assert.equal(failure.queue, queue.name);
      assert.equal(failure.jobId, "job-a");
      assert.deepEqual(await queue.submit("job-a", { fail: false }, NOW), {
        state: "completed",
        jobId: "job-a",
        result: "stored",
      });
      assert.equal(runs.at(-1), false);
      assert.ok(runs.slice(0, -1).every((fail) => fail));
      await queue.close();
    });

    test("a job not done within waitMs is reported pending and still completes", async () => {
      const { processor, runs, gateFor } = gatedProcessor();
      const queue = await newQueue(processor);
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

    test("a closed queue refuses new jobs with QueueClosedError", async () => {
      const queue = await newQueue<null, null>(async () => null);
      await queue.close();
      await assert.rejects(queue.submit("job-c", null, NOW), QueueClosedError);
    });

    test("job ids follow BullMQ's rules in every mode", async () => {
      const queue = await newQueue<null, null>(async () => null);
      for (const jobId of ["", "sha256:abc", "12345"]) {
        await assert.rejects(queue.submit(jobId, null, NOW), RangeError, JSON.stringify(jobId));
      }
      assert.equal((await queue.submit("anchor-12345", null, NOW)).state, "completed");
      await queue.close();
    });
  });
}
