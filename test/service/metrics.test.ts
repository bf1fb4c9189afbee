/**
 * `/metrics` of a web process (issue 14, docs/operations.md "Metrics"): requests go to the API
 * over a real socket, then the metrics listener is scraped over its own socket, and the
 * families, label values and counts must show what was asked. Also the guard (token, 404/405,
 * never on the API port) and the x402 outcomes through the local facilitator peer.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { PrivateKeyAccount } from "viem/accounts";
import { formatAuditLine } from "../../src/access/audit.js";
import { auditDirectoryBytes } from "../../src/access/audit-files.js";
import { type MetricsServer, startMetricsServer } from "../../src/metrics/server.js";
import { startFacilitatorPeer } from "../../src/payments/facilitator-peer.js";
import { requirementFromWire } from "../../src/payments/requirements.js";
import { fromPlain, isObject } from "../../src/verifier/json/value.js";
import {
  NOW_MS,
  signAuthorization,
  testSettings,
  toHeader,
  v1Payment,
  wallet,
} from "../payments/support.js";
import { corpusBytes } from "../support/corpus.js";
import { familiesOf, parseExposition, samplesOf, sampleValue } from "../support/prometheus.js";
import { startTestService, type TestService } from "./support/service.js";

const TRUSTED = corpusBytes("vectors/01_happy_minimal.json");
const UNTRUSTED = corpusBytes("vectors/03_tampered_body.json");
const TOKEN = "scrape-token-0123456789abcdef";

async function listen(service: TestService): Promise<string> {
  await service.app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = service.app.server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function scrape(metrics: MetricsServer, token = TOKEN) {
  const response = await fetch(`${metrics.url}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(response.status, 200);
  const text = await response.text();
  return {
    text,
    samples: parseExposition(text),
    contentType: response.headers.get("content-type"),
  };
}

describe("/metrics of a web process", () => {
  let service: TestService;
  let api: string;
  let metrics: MetricsServer;

  before(async () => {
    service = await startTestService({ limits: { anonymousDailyCap: 1 } });
    api = await listen(service);
    metrics = await startMetricsServer(
      { host: "127.0.0.1", port: 0, token: TOKEN, maxConnections: 32 },
      () => service.app.metrics.render(),
    );
  });
  after(async () => {
    await metrics.close();
    await service.close();
  });

  const post = async (path: string, body: Uint8Array | string) => {
    const response = await fetch(`${api}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...service.authHeaders },
      body: typeof body === "string" ? body : Buffer.from(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  test("requests, verdicts, the digest cache, a cap refusal and the CPU pool are counted", async () => {
    assert.equal((await post("/verify", TRUSTED)).json.verdict, "TRUSTED");
    assert.equal((await post("/verify", UNTRUSTED)).json.verdict, "UNTRUSTED");
    const batch = `{"bundles":[${TRUSTED.toString("utf8")},${UNTRUSTED.toString("utf8")},${UNTRUSTED.toString("utf8")}]}`;
    assert.equal((await post("/verify", batch)).json.count, 3);
    const miss = await post("/verify?cache=1", TRUSTED);
    assert.deepEqual((miss.json.cache as { hit: boolean }).hit, false);
    const hit = await post("/verify?cache=1", TRUSTED);
    assert.deepEqual((hit.json.cache as { hit: boolean }).hit, true);
    assert.equal((await post("/verify", "{")).status, 400);
    // The anonymous bucket holds one call: the second keyless call is refused.
    assert.equal((await fetch(`${api}/notarize`)).status, 200);
    const refused = await fetch(`${api}/notarize`);
    assert.equal(refused.status, 429);
    assert.equal(((await refused.json()) as { error: string }).error, "daily_cap_reached");
    const digest = `sha256:${"ab".repeat(32)}`;
    assert.equal(
      (await fetch(`${api}/anchors/${digest}`, { headers: service.authHeaders })).status,
      404,
    );
    assert.equal((await fetch(`${api}/no/such/route?x=1`)).status, 404);

    const { samples, text, contentType } = await scrape(metrics);
    assert.match(contentType ?? "", /^text\/plain; version=0\.0\.4/);
    for (const family of [
      "receiptd_http_request_duration_seconds",
      "receiptd_verdicts_total",
      "receiptd_cpu_pool_queue_size",
      "receiptd_cpu_pool_utilization",
      "receiptd_cpu_pool_threads",
      "receiptd_cpu_pool_batched_tasks_total",
      "receiptd_cpu_pool_abandoned_tasks_total",
      "receiptd_digest_cache_requests_total",
      "receiptd_cap_refusals_total",
      "receiptd_x402_payments_total",
      "receiptd_store_errors_total",
      "receiptd_queue_jobs",
      "receiptd_queue_oldest_waiting_seconds",
      "receiptd_queue_job_failures_total",
      // Node's default process metrics.
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "nodejs_eventloop_lag_seconds",
      "nodejs_heap_size_used_bytes",
    ]) {
      assert.ok(familiesOf(text).has(family), `family ${family}`);
    }

    // Single TRUSTED, the batch's one and the cache miss; the hit is not a verification.
    assert.equal(sampleValue(samples, "receiptd_verdicts_total", { verdict: "TRUSTED" }), 3);
    assert.equal(sampleValue(samples, "receiptd_verdicts_total", { verdict: "UNTRUSTED" }), 3);
    assert.equal(sampleValue(samples, "receiptd_verdicts_total", { verdict: "PROVISIONAL" }), 0);
    assert.equal(
      sampleValue(samples, "receiptd_digest_cache_requests_total", { result: "hit" }),
      1,
    );
    assert.equal(
      sampleValue(samples, "receiptd_digest_cache_requests_total", { result: "miss" }),
      1,
    );
    assert.equal(sampleValue(samples, "receiptd_cap_refusals_total", { bucket: "anonymous" }), 1);
    assert.equal(sampleValue(samples, "receiptd_cap_refusals_total", { bucket: "key" }), 0);
    assert.equal(sampleValue(samples, "receiptd_cpu_pool_threads"), 1);
    assert.equal(sampleValue(samples, "receiptd_cpu_pool_queue_size"), 0);
    const utilization = sampleValue(samples, "receiptd_cpu_pool_utilization");
    assert.ok(utilization >= 0 && utilization <= 1, String(utilization));

    const count = (labels: Record<string, string>) =>
      sampleValue(samples, "receiptd_http_request_duration_seconds_count", labels);
    assert.equal(count({ method: "POST", route: "/verify", status: "200" }), 5);
    assert.equal(count({ method: "POST", route: "/verify", status: "400" }), 1);
    assert.equal(count({ method: "GET", route: "/notarize", status: "429" }), 1);
    assert.equal(count({ method: "GET", route: "/anchors/:digest", status: "404" }), 1);
    assert.equal(count({ method: "GET", route: "unmatched", status: "404" }), 1);
    const buckets = samplesOf(samples, "receiptd_http_request_duration_seconds_bucket", {
      route: "/verify",
      status: "200",
    });
    assert.equal(buckets.find((sample) => sample.labels.le === "+Inf")?.value, 5);
    // Label values are patterns, never what a client wrote.
    const routes = new Set(samples.map((sample) => sample.labels.route).filter(Boolean));
    assert.deepEqual([...routes].sort(), ["/anchors/:digest", "/notarize", "/verify", "unmatched"]);
    // Embedded mode has no BullMQ queue to report.
    assert.equal(samplesOf(samples, "receiptd_queue_jobs").length, 0);
  });

  test("the guard: a token is required, other paths and methods are refused", async () => {
    const missing = await fetch(`${metrics.url}/metrics`);
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get("www-authenticate"), 'Bearer realm="receiptd-metrics"');
    const body = (await missing.json()) as { error: string; detail: string };
    assert.equal(body.error, "metrics_token_required");
    assert.match(body.detail, /METRICS_TOKEN/);
    const wrong = await fetch(`${metrics.url}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}x` },
    });
    assert.equal(wrong.status, 401);
    const basic = await fetch(`${metrics.url}/metrics`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}` },
    });
    assert.equal(basic.status, 401);
    const post = await fetch(`${metrics.url}/metrics`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(post.status, 405);
    assert.deepEqual(await post.json(), { error: "method_not_allowed" });
    const elsewhere = await fetch(`${metrics.url}/verify`);
    assert.equal(elsewhere.status, 404);
    assert.deepEqual(await elsewhere.json(), { error: "not_found" });
  });

  test("/metrics is not served on the API port", async () => {
    const response = await fetch(`${api}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}`, ...service.authHeaders },
    });
    assert.equal(response.status, 404);
    // The API's answer to a path it does not have (it links /openapi.json).
    const body = (await response.json()) as { error: string; docs: string };
    assert.equal(body.error, "not_found");
    assert.equal(body.docs, "/openapi.json");
  });

  test("each app has its own registry", async () => {
    const other = await startTestService();
    try {
      const text = await other.app.metrics.render();
      const samples = parseExposition(text);
      assert.equal(sampleValue(samples, "receiptd_verdicts_total", { verdict: "TRUSTED" }), 0);
      assert.equal(samplesOf(samples, "receiptd_http_request_duration_seconds_count").length, 0);
    } finally {
      await other.close();
    }
    // This app's figures are untouched by the other's construction and closing.
    const { samples } = await scrape(metrics);
    assert.equal(sampleValue(samples, "receiptd_verdicts_total", { verdict: "TRUSTED" }), 3);
  });
});

describe("/metrics: the audit directory's size (issue 37)", () => {
  test("measured at compaction, compressed days counted compressed, plus what was written since", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "receiptd-audit-metric-"));
    const auditDir = join(dataDir, "audit");
    await mkdir(auditDir, { recursive: true });
    const nowMs = Date.now();
    const closedDay = new Date(nowMs - 3 * 24 * 3600_000).toISOString().slice(0, 10);
    const line = formatAuditLine(
      {
        principal: "anonymous",
        method: "GET",
        route: "/health",
        status: 200,
        bytes: 1,
        latencyMs: 1,
      },
      Date.parse(`${closedDay}T12:00:00Z`),
    );
    await writeFile(join(auditDir, `${closedDay}.jsonl`), line.repeat(1000));
    const service = await startTestService({ dataDir });
    try {
      const audit = service.app.accessServices.audit;
      // The compaction started with the app; this waits for it (or runs one more).
      await audit.compact();
      assert.ok((await readdir(auditDir)).includes(`${closedDay}.jsonl.gz`));
      const measured = sampleValue(
        parseExposition(await service.app.metrics.render()),
        "receiptd_audit_bytes",
      );
      assert.equal(measured, await auditDirectoryBytes(auditDir));
      assert.ok(measured > 0 && measured < line.length * 1000, String(measured));

      const answer = await service.app.inject({
        method: "POST",
        url: "/verify",
        headers: { "content-type": "application/json", ...service.authHeaders },
        payload: TRUSTED,
      });
      assert.equal(answer.statusCode, 200);
      await audit.flush();
      const grown = sampleValue(
        parseExposition(await service.app.metrics.render()),
        "receiptd_audit_bytes",
      );
      assert.ok(grown > measured, `${grown} > ${measured}`);
      assert.equal(grown, await auditDirectoryBytes(auditDir));
    } finally {
      await service.close();
    }
  });
});

describe("/metrics: x402 payments by outcome", () => {
  let peer: { url: string; close(): Promise<void> };
  let service: TestService;
  const payer: PrivateKeyAccount = wallet();

  before(async () => {
    peer = await startFacilitatorPeer({ clock: () => NOW_MS });
    service = await startTestService(
      {
        payments: {
          settings: testSettings(),
          facilitatorUrl: peer.url,
          publicBaseUrl: "https://receiptd.example",
        },
      },
      { clock: () => NOW_MS, anonymous: true },
    );
  });
  after(async () => {
    await service.close();
    await peer.close();
  });

  const verify = (headers: Record<string, string>, payload: Buffer | string = TRUSTED) =>
    service.app.inject({ method: "POST", url: "/verify", headers, payload });

  test("settled, replayed, abandoned and invalid payments are counted once each", async () => {
    const challenge = await verify({});
    assert.equal(challenge.statusCode, 402);
    const offer = fromPlain((challenge.json() as { accepts: unknown[] }).accepts[0]);
    assert.ok(isObject(offer));
    const pay = async () => {
      const signed = await signAuthorization(payer, requirementFromWire(offer, 1));
      return { "x-payment": toHeader(v1Payment(String(offer.get("network")), signed)) };
    };
    const paid = await pay();
    assert.equal((await verify(paid)).statusCode, 200);
    assert.equal((await verify(paid)).statusCode, 402);
    assert.equal((await verify(await pay(), '{"a":1,"a":2}')).statusCode, 400);
    assert.equal((await verify({ "x-payment": "not base64 json" })).statusCode, 402);

    const samples = parseExposition(await service.app.metrics.render());
    const outcome = (name: string) =>
      sampleValue(samples, "receiptd_x402_payments_total", { outcome: name });
    assert.equal(outcome("settled"), 1);
    assert.equal(outcome("replayed"), 1);
    assert.equal(outcome("abandoned"), 1);
    assert.equal(outcome("invalid"), 1);
    assert.equal(outcome("declined"), 0);
    assert.equal(outcome("failed"), 0);
    assert.equal(sampleValue(samples, "receiptd_verdicts_total", { verdict: "TRUSTED" }), 1);
  });
});
