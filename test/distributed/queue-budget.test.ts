/**
 * The bounded queue in distributed mode (issue 34, finding 3), over real sockets, on a private
 * Redis: a web process admits each write against the anchors queue's byte budget before its
 * add, so one principal past its share is answered `503 queue_full` (nothing enqueued, its
 * anchor quota given back) while another principal still writes; once a worker drains the
 * queue, the admitted writes are stored, the refused ones are not, and the budget is back to 0.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { type QueueWorker, startReceiptdWorkers } from "../../queues/bullmq-worker.js";
import { QueueBudget } from "../../queues/queue-budget.js";
import { ServiceIdentity } from "../../src/service/service-key.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { openDocumentStore } from "../../src/storage/open.js";
import { readUsage } from "../../src/storage/usage.js";
import {
  openTestRedis,
  type PrivateRedis,
  randomPrefix,
  startPrivateRedis,
} from "../redis/support.js";
import { startTestService, type TestService } from "../service/support/service.js";

/** A pending-proof anchor job is a few hundred bytes: a share fits a few, not ten. */
const BUDGET_BYTES = 8_000;
const SHARE_PERCENT = 20;
const SHARE_BYTES = (BUDGET_BYTES * SHARE_PERCENT) / 100;
const DRAIN_MS = 30_000;

interface Posted {
  digest: string;
  status: number;
  body: { error?: string; detail?: string; limit?: number; held?: number };
  retryAfter: string | null;
}

describe("a bounded queue across the deployment", () => {
  let redis: PrivateRedis;
  let service: TestService;
  let workerStore: DocumentStore | undefined;
  let workers: QueueWorker[] = [];
  let base: string;
  let otherKey: string;
  const prefix = randomPrefix();

  before(async () => {
    redis = await startPrivateRedis();
    service = await startTestService({
      redisUrl: redis.url,
      redisPrefix: prefix,
      queueBudget: { budgetBytes: BUDGET_BYTES, sharePercent: SHARE_PERCENT },
    });
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    otherKey = (
      await service.app.accessServices.keys.create({ name: "queue-budget-other", dailyCap: 1e9 })
    ).key;
  });
  after(async () => {
    for (const worker of workers) await worker.close(5_000);
    await workerStore?.close();
    await service.close();
    await redis.stop();
  });

  async function postAnchor(label: string, headers: Record<string, string>): Promise<Posted> {
    const digest = `sha256:${sha256(label).toString("hex")}`;
    const answer = await fetch(`${base}/anchors`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ digest, proof: pendingProof(sha256(label)).toString("base64") }),
    });
    return {
      digest,
      status: answer.status,
      body: (await answer.json()) as Posted["body"],
      retryAfter: answer.headers.get("retry-after"),
    };
  }

  test("one principal past its share is refused before enqueueing; another still writes; the bytes come back", async () => {
    // No worker yet: admitted jobs wait in the queue (each answered 202 after the route's wait).
    const firstPosts = Array.from({ length: 12 }, (_, index) =>
      postAnchor(`budget-first-${index}`, service.authHeaders),
    );
    const other = postAnchor("budget-other", { "x-svc-key": otherKey });
    const firsts = await Promise.all(firstPosts);
    const theOther = await other;

    const admitted = firsts.filter((posted) => posted.status === 202);
    const refused = firsts.filter((posted) => posted.status === 503);
    assert.equal(admitted.length + refused.length, firsts.length);
    assert.ok(admitted.length >= 1, "the first principal had some of its share");
    assert.ok(refused.length >= 1, "the first principal was refused past its share");
    for (const posted of refused) {
      assert.equal(posted.body.error, "queue_full");
      assert.match(posted.body.detail ?? "", /this principal's queued anchors jobs/);
      assert.equal(posted.body.limit, SHARE_BYTES);
      assert.equal(posted.retryAfter, "5");
    }
    assert.equal(theOther.status, 202, "the other principal keeps its share");

    const budget = await openTestRedis("", redis.url);
    try {
      const anchors = new QueueBudget(budget.client, prefix, "anchors");
      const held = await anchors.heldBytes();
      assert.ok(held > 0 && held <= SHARE_BYTES + SHARE_BYTES);
      assert.equal((await anchors.ledger()).length, admitted.length + 1);

      // A worker drains the queue: every admitted write is stored, no refused one, and each
      // job's bytes are released as it completes.
      workerStore = await openDocumentStore(service.config);
      const identity = ServiceIdentity.open(service.config.dataDir);
      workers = startReceiptdWorkers({
        redis: redis.url,
        prefix,
        store: workerStore,
        signer: () => identity.signer(),
        log: { info() {}, warn() {}, error() {} },
      });
      const deadline = Date.now() + DRAIN_MS;
      while ((await anchors.heldBytes()) > 0 && Date.now() < deadline) await sleep(100);
      assert.equal(await anchors.heldBytes(), 0);
      assert.deepEqual(await anchors.ledger(), []);
    } finally {
      await budget.close();
    }
    const readable = async (posted: Posted) =>
      (await fetch(`${base}/anchors/${posted.digest}`)).status === 200;
    for (const posted of [...admitted, theOther]) assert.ok(await readable(posted), posted.digest);
    for (const posted of refused) assert.equal(await readable(posted), false, posted.digest);

    // A refusal gave its anchor quota back: the charge is the stored anchors' bytes alone.
    let stored = 0;
    for (const posted of admitted) {
      const document = await fetch(`${base}/anchors/${posted.digest}`);
      stored += (await document.arrayBuffer()).byteLength;
    }
    const keys = await service.app.accessServices.keys.list();
    const first = keys.find((key) => key.name.startsWith("test-suite-"));
    const charged = await readUsage(
      service.app.documentStore,
      "anchors",
      "principal",
      `key:${first?.id}`,
    );
    assert.equal(charged, stored);
  });
});
