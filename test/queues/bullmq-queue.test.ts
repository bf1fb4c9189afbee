/** The distributed `JobQueue` (queues/bullmq-queue.ts) against the contract of job-queue.ts. */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { BullMqQueue } from "../../queues/bullmq-queue.js";
import { BullMqWorker } from "../../queues/bullmq-worker.js";
import { QueueUnavailableError } from "../../queues/job-queue.js";
import { removePrefix, TEST_REDIS_URL, testPrefix } from "../support/bullmq-redis.js";
import { jobQueueContract, NOW } from "./job-queue-contract.js";

const prefix = testPrefix();
const silent = { info() {}, warn() {}, error() {} };
const running: { close(): Promise<void> }[] = [];
let queues = 0;

after(async () => {
  await Promise.all(running.map((resource) => resource.close()));
  await removePrefix(prefix);
});

jobQueueContract("BullMqQueue", async (processor, options) => {
  // A queue of its own per test, consumed by a worker in this process.
  queues += 1;
  const name = `contract-${queues}`;
  const worker = new BullMqWorker(name, processor, {
    redisUrl: TEST_REDIS_URL,
    prefix,
    log: silent,
  });
  await worker.ready();
  running.push({ close: () => worker.close(5000) });
  const queue = new BullMqQueue<
    Parameters<typeof processor>[0],
    Awaited<ReturnType<typeof processor>>
  >(name, { redisUrl: TEST_REDIS_URL, prefix, attempts: 2, backoffMs: 10, ...options });
  running.push(queue);
  return queue;
});

describe("BullMqQueue", () => {
  test("with Redis unreachable a submission fails fast with QueueUnavailableError", async () => {
    // Nothing listens on port 1; the producer must not wait for a reconnection.
    const queue = new BullMqQueue<null, null>("unreachable", {
      redisUrl: "redis://127.0.0.1:1",
      prefix,
    });
    await assert.rejects(queue.submit("job-a", null, NOW), QueueUnavailableError);
    await assert.rejects(queue.submit("job-a", null, NOW), QueueUnavailableError);
    await queue.close();
  });
});
