/**
 * Issue 36, traces across processes: a `receiptd serve` and a `receiptd worker`, as real
 * processes on a private Redis prefix and PostgreSQL schema, export OTLP/HTTP (`http/json`) to
 * a receiver written here (a tiny HTTP server on 127.0.0.1 that keeps every
 * ExportTraceServiceRequest). One keyed `POST /anchors` and one `POST /payment-receipts` each
 * yield spans from both processes under one trace id; the answer's `traceresponse` names it;
 * a client's `traceparent` is honoured; and no attribute holds what the request carried.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { main as keysMain } from "../../src/cli/keys.js";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../redis/support.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../service/support/server-process.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
/** How long the spans of one request may take to reach the receiver (batches every 100 ms). */
const DEADLINE_MS = 30_000;

/** OTLP/JSON's AnyValue, as far as receiptd's spans use it. */
interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: KeyValue[];
  events?: { name: string; attributes?: KeyValue[] }[];
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[];
  }[];
}

/** A span with its process's resource attributes flattened in. */
interface ReceivedSpan {
  span: OtlpSpan;
  scope: string;
  resource: Map<string, string>;
}

function text(value: AnyValue): string {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return String(value.intValue);
  if (value.doubleValue !== undefined) return String(value.doubleValue);
  if (value.boolValue !== undefined) return String(value.boolValue);
  return (value.arrayValue?.values ?? []).map(text).join(",");
}

/** The OTLP/HTTP receiver: `POST /v1/traces` with JSON, answered `{}`. */
class Receiver {
  readonly spans: ReceivedSpan[] = [];
  readonly contentTypes = new Set<string>();
  readonly #server: Server;

  constructor() {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        this.contentTypes.add(String(request.headers["content-type"]));
        if (request.method === "POST" && request.url === "/v1/traces") {
          this.#collect(JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest);
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
  }

  async listen(): Promise<string> {
    this.#server.listen(0, "127.0.0.1");
    await once(this.#server, "listening");
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    // The exporters keep their connections alive: do not wait for them to time out.
    this.#server.closeAllConnections();
    return closed;
  }

  #collect(body: ExportRequest): void {
    for (const resourceSpans of body.resourceSpans ?? []) {
      const resource = new Map(
        (resourceSpans.resource?.attributes ?? []).map((kv) => [kv.key, text(kv.value)]),
      );
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({ span, scope: scopeSpans.scope?.name ?? "", resource });
        }
      }
    }
  }

  ofTrace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((received) => received.span.traceId === traceId);
  }
}

/** Every attribute value of a span, its events' included. */
function attributeValues(span: OtlpSpan): string[] {
  const all = [
    ...(span.attributes ?? []),
    ...(span.events ?? []).flatMap((e) => e.attributes ?? []),
  ];
  return all.map((kv) => text(kv.value));
}

/** Overlapping 16-character pieces of `content`: any one found in a span would be a leak. */
function fragmentsOf(content: string): string[] {
  const pieces: string[] = [];
  for (let start = 0; start + 16 <= content.length; start += 8) {
    pieces.push(content.slice(start, start + 16));
  }
  return pieces;
}

/** The trace id of a `traceresponse` (or `traceparent`) header. */
function traceIdOf(header: string | null): string {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(header ?? "");
  assert.ok(match?.[1], `a W3C trace header, got ${header}`);
  return match[1];
}

describe("traces across a web process and a worker process (OTLP/HTTP, http/json)", () => {
  const prefix = randomPrefix();
  const schema = privateSchema();
  const receiver = new Receiver();
  let dataDir: string;
  let web: ServerProcess;
  let worker: ChildProcess;
  let workerOutput = "";
  let env: Record<string, string>;

  before(async () => {
    const collector = await receiver.listen();
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-traces-"));
    env = {
      DATA_DIR: dataDir,
      REDIS_URL: SHARED_REDIS_URL,
      REDIS_PREFIX: prefix,
      DATABASE_URL,
      DATABASE_SCHEMA: schema,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "receiptd-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    };
    // The web process first: it creates the schema the worker then finds.
    web = await startServerProcess(env);
    worker = spawn(process.execPath, ["--import", "tsx", RECEIPTD, "worker"], {
      env: { ...process.env, LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    worker.stdout?.on("data", (chunk: Buffer) => {
      workerOutput += chunk.toString("utf8");
    });
    const deadline = Date.now() + DEADLINE_MS;
    while (!workerOutput.includes('"msg":"worker ready"')) {
      if (Date.now() > deadline || worker.exitCode !== null) {
        assert.fail(`the worker did not start:\n${workerOutput}`);
      }
      await sleep(50);
    }
  });

  after(async () => {
    await stopServerProcess(web);
    if (worker.exitCode === null && worker.signalCode === null) {
      const exited = once(worker, "exit");
      worker.kill("SIGTERM");
      await exited;
    }
    await receiver.close();
    const cleanup = await openTestRedis(prefix);
    const keys = await keysUnder(cleanup.client, prefix);
    if (keys.length > 0) await cleanup.client.unlink(...keys);
    await cleanup.close();
    await dropSchema(schema);
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Waits until the trace has spans from a web and a worker process; returns them all. */
  async function traceAcrossProcesses(traceId: string): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + DEADLINE_MS;
    for (;;) {
      const spans = receiver.ofTrace(traceId);
      const processes = new Set(spans.map((s) => s.resource.get("receiptd.process")));
      if (processes.has("web") && processes.has("worker")) {
        // The worker's job span is exported when the job ends; give the web's last batch
        // (its request span ends after the job) the same chance.
        if (spans.some((s) => s.scope === "@fastify/otel" && s.span.name === "request")) {
          return spans;
        }
      }
      if (Date.now() > deadline) {
        assert.fail(
          `trace ${traceId} has ${spans.length} spans from ${[...processes].join(", ")}:\n` +
            spans.map((s) => `${s.resource.get("receiptd.process")} ${s.span.name}`).join("\n"),
        );
      }
      await sleep(50);
    }
  }

  /** The checks both requests share: two processes, one trace, a tree, no content. */
  function assertOneTraceAcrossProcesses(
    webProcess: ServerProcess,
    spans: ReceivedSpan[],
    content: string[],
  ): void {
    const web = spans.filter((s) => s.resource.get("receiptd.process") === "web");
    const work = spans.filter((s) => s.resource.get("receiptd.process") === "worker");
    assert.ok(web.length > 0 && work.length > 0);
    // Two processes: each resource names its own instance and pid, and the shared settings.
    const [webResource, workerResource] = [web[0]?.resource, work[0]?.resource];
    assert.notEqual(webResource?.get("service.instance.id"), undefined);
    assert.notEqual(
      webResource?.get("service.instance.id"),
      workerResource?.get("service.instance.id"),
    );
    assert.equal(webResource?.get("process.pid"), String(webProcess.child.pid));
    assert.equal(workerResource?.get("process.pid"), String(worker.pid));
    for (const resource of [webResource, workerResource]) {
      assert.equal(resource?.get("service.name"), "receiptd-test");
      assert.equal(resource?.get("deployment.environment.name"), "test");
    }
    // The web process's request span, the job's add (web) and its processing (worker).
    const request = web.find((s) => s.scope === "@fastify/otel" && s.span.name === "request");
    assert.ok(request, "the request span");
    assert.ok(
      web.some((s) => s.scope === "bullmq" && s.span.name.startsWith("add")),
      "the job's add, in the web process",
    );
    assert.ok(
      work.some((s) => s.scope === "bullmq" && s.span.name.startsWith("process")),
      "the job's run, in the worker process",
    );
    // PostgreSQL is written by the worker, inside the job's span tree.
    assert.ok(
      work.some((s) => s.span.attributes?.some((kv) => text(kv.value) === "postgresql")),
      "a PostgreSQL client span in the worker",
    );
    // Every span but the request's own has its parent in the trace: one tree, not pieces.
    const ids = new Set(spans.map((s) => s.span.spanId));
    for (const { span } of spans) {
      if (span === request.span) continue;
      assert.ok(
        span.parentSpanId !== undefined && span.parentSpanId !== "" && ids.has(span.parentSpanId),
        `${span.name} has its parent in the trace`,
      );
    }
    // No attribute holds what the request carried (the job ids are the business keys).
    for (const { span } of spans) {
      for (const value of attributeValues(span)) {
        for (const piece of content) {
          assert.ok(!value.includes(piece), `span ${span.name} holds request content: ${value}`);
        }
      }
    }
  }

  test("a keyed POST /anchors under the client's traceparent is one trace in both processes", async () => {
    const lines: string[] = [];
    const created = await keysMain(
      ["create", "--name", "traces", "--key-only"],
      { stdout: (line) => lines.push(line), stderr: () => {} },
      { ...process.env, ...env },
    );
    assert.equal(created, 0);
    const key = lines.join("").trim();
    const digest = sha256(`traces ${prefix}`);
    const proof = pendingProof(digest).toString("base64");
    const clientTrace = randomBytes(16).toString("hex");
    const clientSpan = randomBytes(8).toString("hex");
    const response = await fetch(`${web.base}/anchors`, {
      method: "POST",
      headers: {
        "x-svc-key": key,
        "content-type": "application/json",
        traceparent: `00-${clientTrace}-${clientSpan}-01`,
      },
      body: JSON.stringify({ digest: `sha256:${digest.toString("hex")}`, proof }),
    });
    assert.equal(response.status, 200, await response.text());
    // The answer names the client's trace, and the request span is the client span's child.
    const traceId = traceIdOf(response.headers.get("traceresponse"));
    assert.equal(traceId, clientTrace);
    const spans = await traceAcrossProcesses(traceId);
    const request = spans.find((s) => s.scope === "@fastify/otel" && s.span.name === "request");
    assert.equal(request?.span.parentSpanId, clientSpan);
    const attributes = new Map(
      (request?.span.attributes ?? []).map((kv) => [kv.key, text(kv.value)]),
    );
    assert.equal(attributes.get("http.route"), "/anchors");
    assert.equal(attributes.get("http.response.status_code"), "200");
    // Redis answered the key's cap inside the request's tree.
    assert.ok(
      spans.some((s) => s.span.name === "redis" && s.resource.get("receiptd.process") === "web"),
      "a Redis client span in the web process",
    );
    assertOneTraceAcrossProcesses(web, spans, [...fragmentsOf(proof), key]);
  });

  test("a POST /payment-receipts is one trace in both processes, named by traceresponse", async () => {
    const tx = `0x${sha256(`traces tx ${prefix}`).toString("hex")}`;
    const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
    const asset = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
    const token = await readFile(join(dataDir, "internal.token"), "utf8");
    const response = await fetch(`${web.base}/payment-receipts?note=secret-query-value`, {
      method: "POST",
      headers: { "x-internal-token": token.trim(), "content-type": "application/json" },
      body: JSON.stringify({
        tx,
        network: "eip155:8453",
        asset,
        amount: "10000",
        payTo,
        path: "/verify",
      }),
    });
    assert.equal(response.status, 200, await response.text());
    const traceId = traceIdOf(response.headers.get("traceresponse"));
    const spans = await traceAcrossProcesses(traceId);
    // The settlement's addresses, the internal token and the query string stay out; the
    // receipt the worker returned (BullMQ's job result) would have carried the addresses.
    assertOneTraceAcrossProcesses(web, spans, [payTo, asset, token.trim(), "secret-query-value"]);
    assert.ok(receiver.contentTypes.has("application/json"), "exported as OTLP/JSON");
  });
});
