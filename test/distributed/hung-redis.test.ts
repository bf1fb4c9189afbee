/**
 * A hung Redis (a private redis-server stopped with SIGSTOP, never the shared one) under a
 * distributed instance: the queued writes, `POST /anchors` and `POST /payment-receipts`,
 * answer 503 with their store codes within the producer's command timeout instead of holding
 * the request for as long as Redis stays silent (issue 24, finding 2). Over a real socket.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { PRODUCER_COMMAND_TIMEOUT_MS } from "../../queues/bullmq-queue.js";
import { type PrivateRedis, randomPrefix, startPrivateRedis } from "../redis/support.js";
import { startTestService, type TestService } from "../service/support/service.js";

/** The bound the answers must meet: the command timeout plus generous slack for a busy CI. */
const BOUND_MS = PRODUCER_COMMAND_TIMEOUT_MS + 4_000;

describe("a hung Redis under the queued writes", () => {
  let redis: PrivateRedis;
  let service: TestService;
  let base: string;
  let token: string;

  before(async () => {
    redis = await startPrivateRedis();
    service = await startTestService({ redisUrl: redis.url, redisPrefix: randomPrefix() });
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    token = await readFile(service.config.internalTokenFile, "utf8");
  });
  after(async () => {
    redis.resume();
    await service.close();
    await redis.stop();
  });

  const anchor = (label: string) => {
    const digest = sha256(label);
    return fetch(`${base}/anchors`, {
      method: "POST",
      headers: { "content-type": "application/json", ...service.authHeaders },
      body: JSON.stringify({
        digest: `sha256:${digest.toString("hex")}`,
        proof: pendingProof(digest).toString("base64"),
      }),
    });
  };
  const receipt = (tx: string) =>
    fetch(`${base}/payment-receipts`, {
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

  test("queued writes answer 503 within the bound, and work again once Redis resumes", async () => {
    // Nothing consumes the queues here, so a healthy write answers 202 after its wait; the
    // first one opens the event reader while Redis still answers.
    const healthy = await anchor("before the hang");
    assert.ok([200, 202].includes(healthy.status), String(healthy.status));
    await healthy.arrayBuffer();

    redis.pause();
    const started = Date.now();
    const answers = await Promise.all([
      anchor("during the hang 1"),
      anchor("during the hang 2"),
      receipt(`0x${"ab".repeat(32)}`),
    ]);
    const elapsed = Date.now() - started;
    const bodies = await Promise.all(answers.map((answer) => answer.json()));
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [503, 503, 503],
    );
    assert.deepEqual(
      bodies.map((body) => (body as { error: string }).error),
      ["anchor_store_unavailable", "anchor_store_unavailable", "settlement_store_unavailable"],
    );
    for (const answer of answers) assert.equal(answer.headers.get("retry-after"), "1");
    assert.ok(elapsed < BOUND_MS, `answered after ${elapsed} ms`);

    redis.resume();
    const again = await anchor("after the hang");
    assert.ok([200, 202].includes(again.status), String(again.status));
    await again.arrayBuffer();
  });
});
