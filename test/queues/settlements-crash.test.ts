/**
 * Crash safety of the distributed queues: `receiptd worker` processes are killed with SIGKILL
 * mid-stream, and every job still ends in exactly one stored document per business key. The
 * workers are child processes sharing the test's DATA_DIR (file document store, service key);
 * short lock and stall intervals let the second worker take over the dead one's jobs quickly.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { ANCHORS_QUEUE } from "../../queues/anchors.js";
import { BullMqQueue } from "../../queues/bullmq-queue.js";
import type { JsonData } from "../../queues/job-queue.js";
import { SETTLEMENTS_QUEUE, settlementJobId } from "../../queues/settlements.js";
import { bullmqPrefix } from "../../src/redis/keys.js";
import { prepareAnchorPost } from "../../src/service/endpoints/anchors/answer.js";
import { loadOrCreateServiceKey } from "../../src/service/service-key.js";
import type { CollectionName } from "../../src/storage/document-store.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { removePrefix, TEST_REDIS_URL, testPrefix } from "../support/bullmq-redis.js";

const DEADLINE_MS = 180_000;

interface CrashJob {
  jobId: string;
  payload: JsonData;
}

/**
 * A `receiptd worker` child. The first worker of a run takes one job at a time, so that the
 * kill reliably lands mid-stream however fast the machine is.
 */
function startWorker(dataDir: string, prefix: string, concurrency = 8): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", "src/cli/receiptd.ts", "worker"], {
    env: {
      ...process.env,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      DATA_DIR: dataDir,
      LOG_LEVEL: "error",
      WORKER_LOCK_DURATION_MS: "2000",
      WORKER_STALLED_INTERVAL_MS: "1000",
      WORKER_CONCURRENCY: String(concurrency),
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/** Polls until `done` holds; only a run past the generous deadline fails. */
async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await done())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

/**
 * Enqueues every job, lets a worker store `killAfter` documents, kills it, enqueues every job
 * a second time, and lets a second worker drain the queue. Returns the documents stored.
 */
async function crashRun(
  queueName: string,
  collection: CollectionName,
  jobs: CrashJob[],
  killAfter: number,
): Promise<{ store: FsDocumentStore; dataDir: string; dispose: () => Promise<void> }> {
  const prefix = testPrefix();
  const dataDir = await mkdtemp(join(tmpdir(), "receiptd-crash-"));
  const store = new FsDocumentStore(dataDir);
  const producer = new BullMqQueue<JsonData, JsonData>(queueName, {
    redis: TEST_REDIS_URL,
    prefix,
    retainCompleted: 0,
  });
  const inspectorConnection = new Redis(TEST_REDIS_URL);
  const inspector = new Queue(queueName, {
    connection: inspectorConnection,
    prefix: bullmqPrefix(prefix, queueName),
  });
  const enqueueAll = async () => {
    for (const { jobId, payload } of jobs) {
      assert.equal((await producer.submit(jobId, payload, { waitMs: 0 })).state, "pending");
    }
  };
  const dispose = async () => {
    await producer.close();
    await inspector.close();
    inspectorConnection.disconnect();
    await store.close();
    await removePrefix(prefix);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await enqueueAll();
    const first = startWorker(dataDir, prefix, 1);
    const firstExit = once(first, "exit");
    await until("the first worker stored some documents", async () => {
      return (await store.list(collection)).length >= killAfter;
    });
    first.kill("SIGKILL");
    const [, signal] = await firstExit;
    assert.equal(signal, "SIGKILL");
    const storedAtKill = (await store.list(collection)).length;
    assert.ok(storedAtKill < jobs.length / 2, "the worker was killed mid-stream");
    // Every job again: some are still queued or locked by the dead worker, others done.
    await enqueueAll();
    const second = startWorker(dataDir, prefix);
    const secondExit = once(second, "exit");
    await until("the queue is drained", async () => {
      const counts = await inspector.getJobCounts("wait", "active", "delayed", "prioritized");
      return Object.values(counts).every((count) => count === 0);
    });
    second.kill("SIGTERM");
    const [code] = await secondExit;
    assert.equal(code, 0, "the worker stops cleanly on SIGTERM");
    return { store, dataDir, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

function settlement(n: number) {
  return {
    tx: `0x${createHash("sha256").update(`crash settlement ${n}`).digest("hex")}`,
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "10000",
    payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    path: "/verify",
    ua: "curl/8.5.0",
  };
}

function readJson(bytes: Uint8Array | null): Record<string, unknown> {
  assert.ok(bytes !== null);
  return JSON.parse(Buffer.from(bytes).toString("utf8")) as Record<string, unknown>;
}

describe("kill -9 of a worker loses and duplicates nothing", () => {
  test("settlements: 2,000 jobs for 1,000 transactions store 1,000 receipts", async () => {
    const transactions = Array.from({ length: 1000 }, (_, n) => settlement(n));
    // Each transaction twice in a row, as two producers would submit it.
    const jobs = transactions.flatMap((payload) => {
      const job = { jobId: settlementJobId(payload.tx), payload };
      return [job, job];
    });
    const run = await crashRun(SETTLEMENTS_QUEUE, "settlements", jobs, 100);
    try {
      const ids = await run.store.list("settlements");
      assert.deepEqual(ids, transactions.map((payload) => payload.tx).sort());
      const signer = await loadOrCreateServiceKey(run.dataDir);
      for (const id of ids) {
        const document = readJson(await run.store.get("settlements", id));
        const receipt = document.receipt as Record<string, unknown>;
        assert.equal(receipt.tx, id);
        assert.equal(receipt.issuer, signer.did);
        assert.equal(typeof document.receipt_digest, "string");
      }
    } finally {
      await run.dispose();
    }
  });

  test("anchors: 600 jobs for 300 digests store 300 proofs", async () => {
    const prepared = Array.from({ length: 300 }, (_, n) => {
      const digest = sha256(`crash anchor ${n}`);
      const body = {
        digest: `sha256:${digest.toString("hex")}`,
        proof: pendingProof(digest).toString("base64"),
      };
      const request = prepareAnchorPost(Buffer.from(JSON.stringify(body), "utf8"));
      assert.ok("kind" in request, "a body that is not refused is a store request");
      return request;
    });
    const jobs = prepared.flatMap((request) => {
      const job = { jobId: request.jobId, payload: request.job };
      return [job, job];
    });
    const run = await crashRun(ANCHORS_QUEUE, "anchors", jobs, 10);
    try {
      const ids = await run.store.list("anchors");
      assert.deepEqual(ids, prepared.map((request) => request.job.digest).sort());
      for (const request of prepared) {
        const document = readJson(await run.store.get("anchors", request.job.digest));
        assert.equal(document.proof, request.job.proof);
        assert.equal(document.status, request.job.status);
      }
    } finally {
      await run.dispose();
    }
  });
});
