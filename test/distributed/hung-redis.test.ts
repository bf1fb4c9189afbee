/**
 * A hung Redis (a private redis-server stopped with SIGSTOP, never the shared one) under a
 * distributed instance and a queue worker, over a real socket. What the client is told must be
 * what happened (issue 34, finding 1):
 * - no write hangs: each answers within the producer's command timeout (issue 24, finding 2);
 * - a write whose add was sent but not answered may still run when Redis resumes, so it is
 *   answered 202 with its status URL, and it is stored once Redis is back (which of the first
 *   writes' commands meets the stall first, the cap's or the add, is up to timing; the
 *   queue's own test, test/queues/bullmq-queue.test.ts, pins the add case);
 * - after that first timeout the circuit is open: later writes get a fast 503, having sent
 *   nothing, and are never stored, even after Redis resumes and the worker drains;
 * - the anchor quota charged equals the anchor bytes stored (a 503 gives its charge back, a
 *   202 keeps it).
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { PRODUCER_COMMAND_TIMEOUT_MS } from "../../queues/bullmq-queue.js";
import { type QueueWorker, startReceiptdWorkers } from "../../queues/bullmq-worker.js";
import { ServiceIdentity } from "../../src/service/service-key.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { openDocumentStore } from "../../src/storage/open.js";
import { readUsage } from "../../src/storage/usage.js";
import { type PrivateRedis, randomPrefix, startPrivateRedis } from "../redis/support.js";
import { startTestService, type TestService } from "../service/support/service.js";

/** The bound the answers must meet: the command timeout plus generous slack for a busy CI. */
const BOUND_MS = PRODUCER_COMMAND_TIMEOUT_MS + 4_000;
/** How long the stored writes may take to appear once Redis is back (worker retries included). */
const DRAIN_MS = 30_000;

interface Write {
  label: string;
  /** Where the document is read back. */
  readUrl: string;
  isAnchor: boolean;
  status: number;
  error: string | undefined;
  elapsedMs: number;
}

describe("a hung Redis under the queued writes: the answer is what happened", () => {
  let redis: PrivateRedis;
  let service: TestService;
  let workerStore: DocumentStore;
  let workers: QueueWorker[] = [];
  let base: string;
  let token: string;

  before(async () => {
    redis = await startPrivateRedis();
    const prefix = randomPrefix();
    service = await startTestService({ redisUrl: redis.url, redisPrefix: prefix });
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    token = await readFile(service.config.internalTokenFile, "utf8");
    workerStore = await openDocumentStore(service.config);
    const identity = ServiceIdentity.open(service.config.dataDir);
    workers = startReceiptdWorkers({
      redis: redis.url,
      prefix,
      store: workerStore,
      signer: () => identity.signer(),
      log: { info() {}, warn() {}, error() {} },
    });
    await Promise.all(workers.map((worker) => worker.ready()));
  });
  after(async () => {
    redis.resume();
    for (const worker of workers) await worker.close(5_000);
    await workerStore.close();
    await service.close();
    await redis.stop();
  });

  async function anchor(label: string): Promise<Write> {
    const digest = sha256(label);
    const proof = pendingProof(digest);
    const started = Date.now();
    const answer = await fetch(`${base}/anchors`, {
      method: "POST",
      headers: { "content-type": "application/json", ...service.authHeaders },
      body: JSON.stringify({
        digest: `sha256:${digest.toString("hex")}`,
        proof: proof.toString("base64"),
      }),
    });
    const body = (await answer.json()) as { error?: string };
    return {
      label,
      readUrl: `/anchors/sha256:${digest.toString("hex")}`,
      isAnchor: true,
      status: answer.status,
      error: body.error,
      elapsedMs: Date.now() - started,
    };
  }

  async function receipt(label: string): Promise<Write> {
    const tx = `0x${sha256(label).toString("hex")}`;
    const started = Date.now();
    const answer = await fetch(`${base}/payment-receipts`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-internal-token": token },
      body: JSON.stringify({
        tx,
        network: "eip155:8453",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        amount: "10000",
        payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
        path: "/verify",
      }),
    });
    const body = (await answer.json()) as { error?: string };
    return {
      label,
      readUrl: `/receipts/${tx}`,
      isAnchor: false,
      status: answer.status,
      error: body.error,
      elapsedMs: Date.now() - started,
    };
  }

  const isStored = async (write: Write) =>
    (await fetch(`${base}${write.readUrl}`, { headers: service.authHeaders })).status === 200;

  test("every 503 is never stored, every 202 is stored, and usage is what is stored", async () => {
    const healthy = await anchor("before the hang");
    assert.equal(healthy.status, 200, JSON.stringify(healthy));

    redis.pause();
    // The first Redis command of these writes times out (the cap, or the add) and opens the
    // circuit: each answers 503 if nothing was sent, or 202 if its add was sent.
    const first = await Promise.all([
      anchor("during the hang 1"),
      anchor("during the hang 2"),
      receipt("during the hang 3"),
    ]);
    // The circuit is open now: these are refused before anything is sent.
    const refused = await Promise.all([anchor("while open 1"), receipt("while open 2")]);
    const health = await fetch(`${base}/health`);
    const healthBody = (await health.json()) as { redis?: string };
    redis.resume();

    const writes = [...first, ...refused];
    for (const write of writes) {
      assert.ok(write.elapsedMs < BOUND_MS, `${write.label} answered after ${write.elapsedMs} ms`);
      assert.ok([202, 503].includes(write.status), JSON.stringify(write));
    }
    assert.deepEqual(
      refused.map((write) => [write.status, write.error]),
      [
        [503, "anchor_store_unavailable"],
        [503, "settlement_store_unavailable"],
      ],
    );
    assert.equal(healthBody.redis, "down");

    // Every 202 is stored once Redis is back and the worker has caught up.
    const deadline = Date.now() + DRAIN_MS;
    const accepted = writes.filter((write) => write.status === 202);
    for (const write of accepted) {
      while (!(await isStored(write))) {
        assert.ok(Date.now() < deadline, `${write.label} (202) was never stored`);
        await sleep(200);
      }
    }
    // A write after the recovery goes through as before, behind anything still queued.
    let later = await anchor("after the hang");
    while (later.status === 503 && Date.now() < deadline) {
      await sleep(200);
      later = await anchor("after the hang");
    }
    assert.equal(later.status, 200, JSON.stringify(later));
    // So the worker has drained what the stall left queued: a 503 is still not stored.
    for (const write of writes.filter((each) => each.status === 503)) {
      assert.equal(await isStored(write), false, `${write.label} (503) was stored`);
    }

    // The quota charged is exactly the anchor bytes stored (settlement receipts charge none).
    let stored = 0;
    for (const write of [healthy, ...accepted, later].filter((each) => each.isAnchor)) {
      const document = await fetch(`${base}${write.readUrl}`, { headers: service.authHeaders });
      stored += (await document.arrayBuffer()).byteLength;
    }
    const principal = `key:${(await service.app.accessServices.keys.list())[0]?.id}`;
    const charged = await readUsage(service.app.documentStore, "anchors", "principal", principal);
    assert.equal(charged, stored);
  });
});
