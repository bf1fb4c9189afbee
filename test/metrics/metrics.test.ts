/**
 * The metric definitions and their plumbing without an app: registries per instance, the
 * verdict tally, the store wrapper, the listener's configuration rules, and a BullMQ read
 * against a Redis nobody listens at (a scrape must answer, not hang).
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, test } from "node:test";
import { BullMqQueueStats } from "../../queues/queue-stats.js";
import { ProcessMetrics, ServiceMetrics } from "../../src/metrics/metrics.js";
import { observeDocumentStore } from "../../src/metrics/observe.js";
import { ConfigError, metricsListenerFrom } from "../../src/service/config.js";
import {
  type DocumentStore,
  DocumentStoreUnavailableError,
} from "../../src/storage/document-store.js";
import { nodeCrypto } from "../../src/verifier/crypto/node.js";
import { setVerifierCrypto } from "../../src/verifier/crypto/provider.js";
import { parseExposition, sampleValue } from "../support/prometheus.js";

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  assert.ok(address && typeof address === "object");
  return address.port;
}

describe("metrics", () => {
  test("two registries in one process count apart, every metric name is receiptd_ or Node's", async () => {
    const first = new ServiceMetrics();
    const second = new ServiceMetrics();
    first.countVerdicts({ TRUSTED: 2, UNTRUSTED: 1 });
    first.countVerdicts(undefined);
    first.countVerdicts({ PROVISIONAL: 0 });
    const one = parseExposition(await first.render());
    const two = parseExposition(await second.render());
    assert.equal(sampleValue(one, "receiptd_verdicts_total", { verdict: "TRUSTED" }), 2);
    assert.equal(sampleValue(one, "receiptd_verdicts_total", { verdict: "UNTRUSTED" }), 1);
    assert.equal(sampleValue(one, "receiptd_verdicts_total", { verdict: "PROVISIONAL" }), 0);
    assert.equal(sampleValue(two, "receiptd_verdicts_total", { verdict: "TRUSTED" }), 0);
    for (const sample of one) {
      assert.match(sample.name, /^(receiptd_|process_|nodejs_)/, sample.name);
    }
    // A worker process has no CPU pool, no requests and no verdicts to report.
    const worker = parseExposition(await new ProcessMetrics().render());
    assert.equal(worker.filter((sample) => sample.name.startsWith("receiptd_cpu_pool")).length, 0);
    assert.equal(worker.filter((sample) => sample.name.startsWith("receiptd_verdicts")).length, 0);
  });

  test("help texts are written for every receiptd_ family", async () => {
    const text = await new ServiceMetrics().render();
    const families = [...text.matchAll(/^# TYPE (receiptd_\S+) /gm)].map((match) => match[1]);
    assert.ok(families.length >= 12, String(families.length));
    for (const family of families) {
      const help = new RegExp(`^# HELP ${family} (.+)$`, "m").exec(text)?.[1] ?? "";
      assert.ok(help.length > 20, `help of ${family}: ${help}`);
    }
  });

  test("the crypto provider in use is named, and follows a switch to OpenSSL", async () => {
    const metrics = new ProcessMetrics();
    const provider = async () =>
      parseExposition(await metrics.render())
        .filter((sample) => sample.name === "receiptd_crypto_provider_info")
        .map((sample) => [sample.labels.provider, sample.value]);
    assert.deepEqual(await provider(), [["libsodium", 1]]);
    const previous = setVerifierCrypto(nodeCrypto);
    try {
      assert.deepEqual(await provider(), [["openssl", 1]]);
    } finally {
      setVerifierCrypto(previous);
    }
  });

  test("the store wrapper counts failures by operation and kind and passes them on", async () => {
    const metrics = new ProcessMetrics();
    const failing: DocumentStore = {
      get: async () => {
        throw new DocumentStoreUnavailableError("down");
      },
      create: async () => {
        throw new RangeError("bad id");
      },
      replace: async () => true,
      delete: async () => false,
      list: async () => ["a"],
      close: async () => {},
    };
    const store = observeDocumentStore(failing, (operation, kind) =>
      metrics.storeErrors.inc({ operation, kind }),
    );
    await assert.rejects(store.get("anchors", "x"), DocumentStoreUnavailableError);
    await assert.rejects(store.get("anchors", "y"), DocumentStoreUnavailableError);
    await assert.rejects(store.create("anchors", "x", new Uint8Array()), RangeError);
    assert.equal(await store.replace("anchors", "x", null, new Uint8Array()), true);
    assert.deepEqual(await store.list("anchors"), ["a"]);
    const samples = parseExposition(await metrics.render());
    const errors = (operation: string, kind: string) =>
      sampleValue(samples, "receiptd_store_errors_total", { operation, kind });
    assert.equal(errors("get", "unavailable"), 2);
    assert.equal(errors("create", "other"), 1);
    assert.equal(errors("replace", "unavailable"), 0);
    assert.equal(errors("list", "other"), 0);
  });

  test("a Redis that cannot be reached gives queue_up 0, promptly, and no stale figures", async () => {
    const port = await closedPort();
    const stats = new BullMqQueueStats({
      redis: `redis://127.0.0.1:${port}`,
      prefix: "receiptd-test-none",
      names: ["anchors", "settlements"],
      timeoutMs: 500,
    });
    const metrics = new ProcessMetrics();
    metrics.observeQueues(stats);
    try {
      const samples = parseExposition(await metrics.render());
      assert.equal(sampleValue(samples, "receiptd_queue_up", { queue: "anchors" }), 0);
      assert.equal(sampleValue(samples, "receiptd_queue_up", { queue: "settlements" }), 0);
      assert.equal(samples.filter((sample) => sample.name === "receiptd_queue_jobs").length, 0);
      assert.equal(
        sampleValue(samples, "receiptd_queue_job_failures_total", {
          queue: "anchors",
          final: "true",
        }),
        0,
      );
    } finally {
      await stats.close();
    }
  });
});

describe("metricsListenerFrom", () => {
  test("off unless the port variable is set; loopback by default", () => {
    assert.equal(metricsListenerFrom({}, "METRICS_PORT"), null);
    assert.equal(metricsListenerFrom({ METRICS_PORT: "" }, "METRICS_PORT"), null);
    assert.deepEqual(metricsListenerFrom({ METRICS_PORT: "9464" }, "METRICS_PORT"), {
      host: "127.0.0.1",
      port: 9464,
      token: null,
      maxConnections: 32,
    });
    assert.equal(
      metricsListenerFrom({ METRICS_PORT: "9464", METRICS_MAX_CONNECTIONS: "4" }, "METRICS_PORT")
        ?.maxConnections,
      4,
    );
    // The worker's own variable, so web and worker can share one environment.
    assert.equal(metricsListenerFrom({ METRICS_PORT: "9464" }, "WORKER_METRICS_PORT"), null);
    assert.equal(
      metricsListenerFrom({ WORKER_METRICS_PORT: "9465" }, "WORKER_METRICS_PORT")?.port,
      9465,
    );
  });

  test("a non-loopback host needs a token; tokens are long enough and printable", () => {
    assert.throws(
      () => metricsListenerFrom({ METRICS_PORT: "9464", METRICS_HOST: "0.0.0.0" }, "METRICS_PORT"),
      (error: unknown) => error instanceof ConfigError && /METRICS_TOKEN/.test(error.message),
    );
    const token = "0123456789abcdef-token";
    assert.deepEqual(
      metricsListenerFrom(
        { METRICS_PORT: "9464", METRICS_HOST: "0.0.0.0", METRICS_TOKEN: token },
        "METRICS_PORT",
      ),
      { host: "0.0.0.0", port: 9464, token, maxConnections: 32 },
    );
    for (const bad of ["short", "has a space in it!!"]) {
      assert.throws(
        () => metricsListenerFrom({ METRICS_PORT: "1", METRICS_TOKEN: bad }, "METRICS_PORT"),
        ConfigError,
      );
    }
    assert.throws(() => metricsListenerFrom({ METRICS_PORT: "http" }, "METRICS_PORT"), ConfigError);
    assert.throws(
      () => metricsListenerFrom({ METRICS_PORT: "70000" }, "METRICS_PORT"),
      ConfigError,
    );
  });
});
