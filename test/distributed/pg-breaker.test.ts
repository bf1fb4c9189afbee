/**
 * The PostgreSQL circuit breaker (issue 34, finding 4), over real sockets: a web whose
 * database sits behind a TCP proxy that the test stalls (every byte held, nothing closed, as
 * SIGSTOP does) and then releases. The first request that needs the database waits out the
 * client-side timeout; that opens the breaker, after which requests that need the database
 * are answered 503 without sending anything, `/health` says `db: "down"` at once, and a
 * background `SELECT 1` closes the breaker once the database answers. Nothing answered 503
 * while the breaker was open is ever stored, and writes succeed again after the release.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import type { PgDocumentStore } from "../../src/storage/pg-document-store.js";
import { startTestService, type TestService } from "../service/support/service.js";
import { dropSchema, privateSchema, rowBody, TcpProxy } from "../support/pg.js";

const RECOVERY_LIMIT_MS = 30_000;

interface Answer {
  status: number;
  error?: string;
  ms: number;
}

describe("a stalled PostgreSQL behind the breaker", () => {
  const schema = privateSchema();
  const proxy = new TcpProxy();
  let service: TestService;
  let base: string;

  before(async () => {
    await proxy.listen();
    service = await startTestService(
      { databaseUrl: proxy.url, databaseSchema: schema },
      // Keyless reads of anchors are counted in memory (no Redis here).
      {},
    );
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    proxy.release();
    await service?.close();
    await proxy.cut();
    await dropSchema(schema);
  });

  const store = () => service.app.backends.documentStore as PgDocumentStore;

  async function timed(path: string, init?: RequestInit): Promise<Answer> {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, init);
    const body = (await response.json()) as { error?: string };
    return { status: response.status, error: body.error, ms: performance.now() - started };
  }

  function postAnchor(label: string): Promise<Answer & { digest: string }> {
    const digest = `sha256:${sha256(label).toString("hex")}`;
    return timed("/anchors", {
      method: "POST",
      headers: { "content-type": "application/json", ...service.authHeaders },
      body: JSON.stringify({ digest, proof: pendingProof(sha256(label)).toString("base64") }),
    }).then((answer) => ({ ...answer, digest }));
  }

  test("fails fast while open, reports down, recovers by its own probe, stores nothing it refused", async (t) => {
    const warm = await postAnchor("pg-breaker-before");
    assert.ok(warm.status >= 200 && warm.status < 300, JSON.stringify(warm));
    assert.equal(store().circuit, "closed");

    proxy.stall();
    // The first request that needs the database: a read, sent and held by the proxy, waits
    // out the client-side timeout, and opens the breaker.
    const first = await timed(`/anchors/sha256:${"0".repeat(64)}`, {
      headers: service.authHeaders,
    });
    assert.equal(first.status, 503, JSON.stringify(first));
    assert.equal(store().circuit, "open");
    const heldAtOpening = proxy.heldChunks;

    // Now nothing is sent for a request: every write is refused at once, with the store code.
    const refused = [];
    for (let index = 0; index < 5; index += 1)
      refused.push(await postAnchor(`pg-breaker-${index}`));
    const reads = [];
    for (let index = 0; index < 5; index += 1) {
      reads.push(
        await timed(`/anchors/${refused[index]?.digest}`, { headers: service.authHeaders }),
      );
    }
    const health = await timed("/health");
    for (const answer of refused) {
      assert.equal(answer.status, 503, JSON.stringify(answer));
      assert.match(String(answer.error), /store_unavailable$/);
    }
    for (const answer of reads) assert.equal(answer.status, 503, JSON.stringify(answer));
    assert.deepEqual([health.status, health.error], [503, undefined]);
    assert.equal(store().circuit, "open");
    const median = (answers: Answer[]) =>
      answers.map((answer) => answer.ms).sort((a, b) => a - b)[Math.floor(answers.length / 2)] ?? 0;
    t.diagnostic(
      `healthy write ${warm.ms.toFixed(1)} ms; stalled: first request ${first.ms.toFixed(0)} ms (the client-side timeout); then ` +
        `5 writes p50 ${median(refused).toFixed(1)} ms, 5 reads p50 ${median(reads).toFixed(1)} ms, ` +
        `/health ${health.ms.toFixed(1)} ms (wall, on a shared machine); ` +
        `${proxy.heldChunks - heldAtOpening} chunks held after the opening (the probes' connections)`,
    );

    proxy.release();
    const deadline = Date.now() + RECOVERY_LIMIT_MS;
    while (store().circuit === "open" && Date.now() < deadline) await sleep(50);
    assert.equal(store().circuit, "closed", "the probe found the database again");
    const healthy = await fetch(`${base}/health`);
    assert.equal(healthy.status, 200);
    assert.deepEqual(await healthy.json(), { ok: true, db: "up" });

    const after = await postAnchor("pg-breaker-after");
    assert.ok(after.status >= 200 && after.status < 300, JSON.stringify(after));
    while ((await rowBody(schema, "anchors", after.digest)) === null && Date.now() < deadline) {
      await sleep(50);
    }
    assert.notEqual(await rowBody(schema, "anchors", after.digest), null, "written after recovery");
    // Everything held was delivered before that write; none of the refused ones is stored.
    for (const answer of refused) {
      assert.equal(await rowBody(schema, "anchors", answer.digest), null, answer.digest);
      assert.equal((await fetch(`${base}/anchors/${answer.digest}`)).status, 404);
    }
  });
});
