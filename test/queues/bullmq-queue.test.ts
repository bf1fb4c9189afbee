/** The distributed `JobQueue` (queues/bullmq-queue.ts) against the contract of job-queue.ts. */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { BullMqQueue } from "../../queues/bullmq-queue.js";
import { BullMqWorker } from "../../queues/bullmq-worker.js";
import { QueueUnavailableError } from "../../queues/job-queue.js";
import { RedisOutages } from "../../src/redis/outages.js";
import type { RedisTarget } from "../../src/redis/target.js";
import { startTestCluster, type TestCluster } from "../redis/cluster-support.js";
import { startPrivateRedis } from "../redis/support.js";
import { removePrefix, TEST_REDIS_URL, testPrefix } from "../support/bullmq-redis.js";
import { jobQueueContract, NOW } from "./job-queue-contract.js";

const prefix = testPrefix();
const silent = { info() {}, warn() {}, error() {} };
const running: { close(): Promise<void> }[] = [];
let queues = 0;

let cluster: Promise<TestCluster> | undefined;

after(async () => {
  await Promise.all(running.map((resource) => resource.close()));
  await removePrefix(prefix);
  // After the workers and queues on it are closed: a client whose nodes are gone waits.
  if (cluster !== undefined) await (await cluster).stop();
});

// On the shared Redis, and on a Redis Cluster of this file's own (issue 36), whose keys the
// cluster's own teardown removes.
const targets: [string, () => Promise<RedisTarget>][] = [
  ["a single Redis", async () => TEST_REDIS_URL],
  [
    "a Redis Cluster",
    async () => {
      cluster ??= startTestCluster();
      return (await cluster).target;
    },
  ],
];

for (const [where, target] of targets) {
  jobQueueContract(`BullMqQueue on ${where}`, async (processor, options) => {
    // A queue of its own per test, consumed by a worker in this process.
    queues += 1;
    const name = `contract-${queues}`;
    const redis = await target();
    const worker = new BullMqWorker(name, processor, { redis, prefix, log: silent });
    await worker.ready();
    running.push({ close: () => worker.close(5000) });
    const queue = new BullMqQueue<
      Parameters<typeof processor>[0],
      Awaited<ReturnType<typeof processor>>
    >(name, { redis, prefix, attempts: 2, backoffMs: 10, ...options });
    running.push(queue);
    return queue;
  });
}

describe("BullMqQueue", () => {
  test("a job that finishes while its submission checks on it is answered with its result", async () => {
    // The worker can finish a job between the producer's reads of the job and of its state;
    // an instant job, submitted many times, reaches that window now and then.
    const name = "instant";
    const worker = new BullMqWorker<{ n: number }, { n: number }>(name, async (job) => job, {
      redis: TEST_REDIS_URL,
      prefix,
      log: silent,
    });
    await worker.ready();
    running.push({ close: () => worker.close(5000) });
    const queue = new BullMqQueue<{ n: number }, { n: number }>(name, {
      redis: TEST_REDIS_URL,
      prefix,
    });
    running.push(queue);
    for (let n = 0; n < 300; n++) {
      const outcome = await queue.submit(`job-${n}`, { n }, NOW);
      assert.deepEqual(outcome, { state: "completed", jobId: `job-${n}`, result: { n } });
    }
  });

  test("the worker logs each job's outcome at info, without its payload or result", async () => {
    const lines: { level: string; details: Record<string, unknown>; message: string }[] = [];
    const capture = (level: string) => (details: object, message: string) =>
      lines.push({ level, details: details as Record<string, unknown>, message });
    const name = "logged";
    const worker = new BullMqWorker<{ secret: string }, { secret: string }>(
      name,
      async (job) => job,
      {
        redis: TEST_REDIS_URL,
        prefix,
        log: { info: capture("info"), warn: capture("warn"), error: capture("error") },
      },
    );
    await worker.ready();
    running.push({ close: () => worker.close(5000) });
    const queue = new BullMqQueue<{ secret: string }, { secret: string }>(name, {
      redis: TEST_REDIS_URL,
      prefix,
    });
    running.push(queue);
    await queue.submit("job-logged", { secret: "payload-content" }, NOW);
    for (let attempt = 0; attempt < 100 && lines.length === 0; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const completed = lines.filter((line) => line.message === "job completed");
    assert.equal(completed.length, 1);
    assert.equal(completed[0]?.level, "info");
    assert.equal(completed[0]?.details.queue, name);
    assert.equal(completed[0]?.details.jobId, "job-logged");
    assert.doesNotMatch(JSON.stringify(lines), /payload-content/);
  });

  test("with Redis unreachable a submission fails fast with QueueUnavailableError", async () => {
    // Nothing listens on port 1; the producer must not wait for a reconnection.
    const queue = new BullMqQueue<null, null>("unreachable", {
      redis: "redis://127.0.0.1:1",
      prefix,
    });
    await assert.rejects(queue.submit("job-a", null, NOW), QueueUnavailableError);
    await assert.rejects(queue.submit("job-a", null, NOW), QueueUnavailableError);
    await queue.close();
  });

  test("an add sent to a hung Redis is answered pending and runs once Redis resumes; the next is refused unsent", async () => {
    // A private server, stopped with SIGSTOP: the add reaches its socket and waits there.
    const redis = await startPrivateRedis();
    const ran: string[] = [];
    const worker = new BullMqWorker<{ label: string }, null>(
      "hung",
      async ({ label }) => {
        ran.push(label);
        return null;
      },
      { redis: redis.url, prefix, log: silent },
    );
    const outages = new RedisOutages({ warn() {}, info() {} });
    const queue = new BullMqQueue<{ label: string }, null>("hung", {
      redis: redis.url,
      prefix,
      outages,
    });
    try {
      await worker.ready();
      assert.equal((await queue.submit("job-before", { label: "before" }, NOW)).state, "completed");

      redis.pause();
      const sent = await queue.submit("job-sent", { label: "sent" }, { waitMs: 60_000 });
      // Not a failure: the add may still run (it does, below), so the caller is told `pending`.
      assert.deepEqual(sent, { state: "pending", jobId: "job-sent" });
      assert.equal(outages.breaker.state, "open");
      // The circuit is open: refused before anything is sent, so it can never run.
      await assert.rejects(
        queue.submit("job-refused", { label: "refused" }, NOW),
        QueueUnavailableError,
      );
      redis.resume();

      // The pending job runs once Redis answers again; the refused one never does.
      const deadline = Date.now() + 20_000;
      while (!ran.includes("sent")) {
        assert.ok(Date.now() < deadline, "the pending job never ran");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      while (outages.breaker.state === "open") {
        assert.ok(Date.now() < deadline, "the circuit never closed");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal((await queue.submit("job-after", { label: "after" }, NOW)).state, "completed");
      assert.deepEqual(ran, ["before", "sent", "after"]);
    } finally {
      redis.resume();
      await queue.close();
      await worker.close(5000);
      await redis.stop();
    }
  });
});
