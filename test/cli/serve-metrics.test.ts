/**
 * `receiptd serve` with `METRICS_PORT` (issue 14): the metrics listener starts beside the API,
 * on loopback, counts what the API answered, and stops with the server. An exposed
 * `METRICS_HOST` without `METRICS_TOKEN` is refused at startup.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseExposition, sampleValue } from "../support/prometheus.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));

describe("receiptd serve: /metrics", () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-serve-metrics-"));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  test("METRICS_PORT starts a loopback listener that reports the API's requests", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", RECEIPTD, "serve", "--port", "0"], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        CPU_THREADS: "1",
        LOG_LEVEL: "info",
        METRICS_PORT: "0",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    const urls = new Promise<{ api: string; metrics: string }>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        const api = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
        const metrics =
          /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)","msg":"metrics listening"/.exec(
            output,
          )?.[1];
        if (api !== undefined && metrics !== undefined) resolve({ api, metrics });
      });
      child.once("exit", (code) => reject(new Error(`exited early with ${code}:\n${output}`)));
    });
    const { api, metrics } = await urls;
    assert.notEqual(new URL(api).port, new URL(metrics).port);
    assert.equal((await fetch(`${api}/health`)).status, 200);
    assert.equal((await fetch(`${api}/metrics`)).status, 404);

    const response = await fetch(metrics);
    assert.equal(response.status, 200);
    const samples = parseExposition(await response.text());
    assert.equal(
      sampleValue(samples, "receiptd_http_request_duration_seconds_count", {
        method: "GET",
        route: "/health",
        status: "200",
      }),
      1,
    );
    assert.equal(sampleValue(samples, "receiptd_cpu_pool_threads"), 1);

    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    assert.equal(code, 0);
    await assert.rejects(fetch(metrics), "the metrics listener closed with the server");
  });

  test("a METRICS_HOST beyond loopback without METRICS_TOKEN is a configuration error", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "serve"], {
      env: { ...process.env, DATA_DIR: dataDir, METRICS_PORT: "9464", METRICS_HOST: "0.0.0.0" },
      encoding: "utf8",
    });
    assert.equal(result.status, 2);
    assert.match(
      result.stderr,
      /METRICS_HOST 0\.0\.0\.0 is not a loopback address: set METRICS_TOKEN/,
    );
  });
});
