/**
 * Issue 36: tracing is off by default, and free when off. Without an OTLP endpoint the app
 * loads nothing of OpenTelemetry (no SDK, no @fastify/otel, no bullmq-otel: every module this
 * process resolves is recorded by a resolve hook registered before the app is imported), has
 * no trace plugin, hook or request decoration, and answers without a `traceresponse`. The
 * standard variables are read as the specification says.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { register } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ConfigError, loadConfig, tracingFrom } from "../../src/service/config.js";
import { activeTracing, startTracing, stopTracing } from "../../src/tracing/tracing.js";

/** Every module URL resolved after `register`, one per line, written by the hook thread. */
const RECORDER = `
import { appendFileSync } from "node:fs";
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, resolved.url + "\\n");
  return resolved;
}`;

/** What tracing would load: none of it may be resolved while tracing is off. */
const TRACING_MODULES = /@opentelemetry\/|@fastify\/otel|bullmq-otel|\/tracing\/sdk\.[jt]s/;

describe("tracing off (the default)", () => {
  let dir: string;
  let resolvedFile: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "receiptd-tracing-off-"));
    resolvedFile = join(dir, "resolved.txt");
    register(`data:text/javascript,${encodeURIComponent(RECORDER)}`, {
      data: { file: resolvedFile },
    });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const resolved = async () =>
    (await readFile(resolvedFile, "utf8").catch(() => "")).split("\n").filter((l) => l !== "");

  test("the app loads nothing of OpenTelemetry, registers no trace hook and sends no traceresponse", async () => {
    const config = loadConfig(
      {},
      { dataDir: join(dir, "data"), logLevel: "silent", cpuPool: { threads: 1 } },
    );
    assert.equal(config.tracing, null);
    assert.equal(await startTracing(config.tracing, "web"), null);
    const { buildApp } = await import("../../src/service/app.js");
    const app = await buildApp(config);
    try {
      const health = await app.inject({ method: "GET", url: "/health" });
      assert.equal(health.statusCode, 200);
      assert.equal(health.headers.traceresponse, undefined);
      assert.equal(activeTracing(), null);
      assert.equal(app.hasPlugin("receiptd-tracing"), false);
      assert.equal(app.hasPlugin("@fastify/otel"), false);
      assert.equal(app.hasRequestDecorator("opentelemetry"), false);
    } finally {
      await app.close();
    }
    const urls = await resolved();
    // The recorder saw the app being loaded (so its silence below means something)…
    assert.ok(
      urls.some((url) => url.endsWith("/src/service/app.ts") || url.endsWith("/service/app.js")),
      "the resolve hook recorded the app's modules",
    );
    // …and nothing of tracing.
    assert.deepEqual(
      urls.filter((url) => TRACING_MODULES.test(url)),
      [],
    );
  });

  test("turned on, the SDK is loaded then, and only then", async () => {
    const before = (await resolved()).filter((url) => TRACING_MODULES.test(url));
    assert.deepEqual(before, []);
    const tracing = await startTracing(
      tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" }),
      "web",
    );
    try {
      assert.notEqual(tracing, null);
      assert.equal(activeTracing(), tracing);
      const loaded = (await resolved()).filter((url) => TRACING_MODULES.test(url));
      assert.ok(loaded.some((url) => /tracing\/sdk\.[jt]s$/.test(url)));
      assert.ok(loaded.some((url) => url.includes("@opentelemetry/sdk-trace-node")));
    } finally {
      await stopTracing();
    }
    assert.equal(activeTracing(), null);
  });
});

describe("the OpenTelemetry variables (tracingFrom)", () => {
  test("off without an endpoint, or when disabled", () => {
    assert.equal(tracingFrom({}), null);
    assert.equal(tracingFrom({ OTEL_SERVICE_NAME: "x" }), null);
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" };
    assert.equal(tracingFrom({ ...endpoint, OTEL_SDK_DISABLED: "true" }), null);
    assert.equal(tracingFrom({ ...endpoint, OTEL_TRACES_EXPORTER: "none" }), null);
  });

  test("the base endpoint gains /v1/traces; the traces endpoint is used as is and wins", () => {
    assert.deepEqual(tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }), {
      tracesUrl: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      serviceName: "receiptd",
      resourceAttributes: {},
    });
    assert.equal(
      tracingFrom({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://other:4318/custom",
      })?.tracesUrl,
      "http://other:4318/custom",
    );
  });

  test("protocol, service name and resource attributes", () => {
    const config = tracingFrom({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_RESOURCE_ATTRIBUTES:
        "service.name=from-attributes, deployment.environment.name=eu%20west",
    });
    assert.equal(config?.protocol, "http/json");
    assert.equal(config?.serviceName, "from-attributes");
    assert.deepEqual(config?.resourceAttributes, {
      "service.name": "from-attributes",
      "deployment.environment.name": "eu west",
    });
    assert.equal(
      tracingFrom({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_SERVICE_NAME: "named",
        OTEL_RESOURCE_ATTRIBUTES: "service.name=ignored",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
      })?.serviceName,
      "named",
    );
  });

  test("unusable values stop the start", () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    assert.throws(
      () => tracingFrom({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
      ConfigError,
    );
    assert.throws(() => tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }), ConfigError);
    assert.throws(
      () => tracingFrom({ ...endpoint, OTEL_RESOURCE_ATTRIBUTES: "novalue" }),
      ConfigError,
    );
    assert.throws(
      () => tracingFrom({ ...endpoint, OTEL_RESOURCE_ATTRIBUTES: "a=%E0%A4%A" }),
      ConfigError,
    );
  });
});
