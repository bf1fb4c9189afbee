/**
 * BullMQ figures on `/metrics` in distributed mode (issue 14), with real Redis: a web app sees
 * the jobs waiting for a worker and their lag; then a real `receiptd worker` child serves its
 * own `/metrics` on `WORKER_METRICS_PORT`, behind `METRICS_TOKEN`, and counts the failed runs of
 * the jobs it takes (a permanent failure is final, a retried one is not).
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { ANCHORS_QUEUE } from "../../queues/anchors.js";
import { SETTLEMENTS_QUEUE } from "../../queues/settlements.js";
import { bullmqPrefix } from "../../src/redis/keys.js";
import { startTestService, type TestService } from "../service/support/service.js";
import { removePrefix, TEST_REDIS_URL, testPrefix } from "../support/bullmq-redis.js";
import { parseExposition, type Sample, samplesOf, sampleValue } from "../support/prometheus.js";

const TOKEN = "worker-scrape-token-0123456789";
const DEADLINE_MS = 60_000;

/** Polls until `done` holds; only a run past the generous deadline fails. */
async function until<T>(what: string, attempt: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await attempt();
    if (value !== null) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(50);
  }
}

/** Starts `receiptd worker` and resolves with its metrics URL, read from its "metrics listening" log line. */
async function startWorker(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/receiptd.ts", "worker"], {
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Log lines go to stdout (web and worker write one format there); stderr is drained too so
  // the child never blocks on a full pipe.
  child.stderr?.resume();
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      // Only complete lines: a chunk may end mid-line.
      for (const line of output.split("\n").slice(0, -1)) {
        if (!line.startsWith("{")) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === "metrics listening" && entry.url !== undefined) {
          child.stdout?.off("data", onData);
          child.off("exit", onExit);
          child.stdout?.resume();
          resolve(entry.url);
          return;
        }
      }
    };
    const onExit = (code: number | null) =>
      reject(new Error(`worker exited (${code}):\n${output}`));
    child.stdout?.on("data", onData);
    child.once("exit", onExit);
  });
  return { child, url };
}

describe("BullMQ metrics of web and worker processes", () => {
  const prefix = testPrefix();
  let dataDir: string;
  let connection: Redis;
  let anchors: Queue;
  let settlements: Queue;
  let web: TestService;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-worker-metrics-"));
    connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    anchors = new Queue(ANCHORS_QUEUE, {
      connection,
      prefix: bullmqPrefix(prefix, ANCHORS_QUEUE),
    });
    settlements = new Queue(SETTLEMENTS_QUEUE, {
      connection,
      prefix: bullmqPrefix(prefix, SETTLEMENTS_QUEUE),
    });
    web = await startTestService({ redisUrl: TEST_REDIS_URL, redisPrefix: prefix });
  });
  after(async () => {
    await web.close();
    await anchors.close();
    await settlements.close();
    connection.disconnect();
    await removePrefix(prefix);
    await rm(dataDir, { recursive: true, force: true });
  });

  test("the web process reports jobs by state and the lag of the oldest waiting job", async () => {
    // An anchor job that will fail once and be retried an hour later; a settlement job a
    // worker refuses for good (its payload is not a settlement); and one delayed job.
    await anchors.add(
      ANCHORS_QUEUE,
      {},
      { attempts: 2, backoff: { type: "fixed", delay: 3_600_000 } },
    );
    await settlements.add(SETTLEMENTS_QUEUE, {}, { attempts: 3 });
    await settlements.add(SETTLEMENTS_QUEUE, {}, { delay: 3_600_000 });

    const lag = (samples: Sample[], queue: string) =>
      sampleValue(samples, "receiptd_queue_oldest_waiting_seconds", { queue });
    const samples = await until("the waiting jobs have waited a measurable time", async () => {
      const scraped = parseExposition(await web.app.metrics.render());
      return lag(scraped, ANCHORS_QUEUE) > 0 && lag(scraped, SETTLEMENTS_QUEUE) > 0
        ? scraped
        : null;
    });
    const jobs = (queue: string, state: string) =>
      sampleValue(samples, "receiptd_queue_jobs", { queue, state });
    assert.equal(sampleValue(samples, "receiptd_queue_up", { queue: ANCHORS_QUEUE }), 1);
    assert.equal(sampleValue(samples, "receiptd_queue_up", { queue: SETTLEMENTS_QUEUE }), 1);
    assert.equal(jobs(ANCHORS_QUEUE, "waiting"), 1);
    assert.equal(jobs(SETTLEMENTS_QUEUE, "waiting"), 1);
    assert.equal(jobs(SETTLEMENTS_QUEUE, "delayed"), 1);
    assert.equal(jobs(ANCHORS_QUEUE, "active"), 0);
    assert.equal(jobs(ANCHORS_QUEUE, "failed"), 0);
    // The delayed job is not ready: the lag is the waiting one's, seconds, not an hour ahead.
    assert.ok(lag(samples, SETTLEMENTS_QUEUE) < 600, String(lag(samples, SETTLEMENTS_QUEUE)));
  });

  test("receiptd worker serves its own /metrics: failed runs, queue figures, the token", async () => {
    const worker = await startWorker({
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      DATA_DIR: dataDir,
      WORKER_METRICS_PORT: "0",
      METRICS_TOKEN: TOKEN,
    });
    const exited = once(worker.child, "exit");
    try {
      assert.match(worker.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const refused = await fetch(worker.url);
      assert.equal(refused.status, 401);
      assert.equal(((await refused.json()) as { error: string }).error, "metrics_token_required");

      const scrape = async (): Promise<Sample[]> => {
        const response = await fetch(worker.url, { headers: { authorization: `Bearer ${TOKEN}` } });
        assert.equal(response.status, 200);
        return parseExposition(await response.text());
      };
      const failures = (samples: Sample[], queue: string, final: string) =>
        sampleValue(samples, "receiptd_queue_job_failures_total", { queue, final });
      const samples = await until("both waiting jobs have failed once", async () => {
        const scraped = await scrape();
        const done =
          failures(scraped, SETTLEMENTS_QUEUE, "true") >= 1 &&
          failures(scraped, ANCHORS_QUEUE, "false") >= 1 &&
          sampleValue(scraped, "receiptd_queue_jobs", {
            queue: ANCHORS_QUEUE,
            state: "delayed",
          }) === 1;
        return done ? scraped : null;
      });
      // The settlement was refused at once for good; the anchor is waiting for its retry.
      assert.equal(failures(samples, SETTLEMENTS_QUEUE, "true"), 1);
      assert.equal(failures(samples, SETTLEMENTS_QUEUE, "false"), 0);
      assert.equal(failures(samples, ANCHORS_QUEUE, "false"), 1);
      assert.equal(failures(samples, ANCHORS_QUEUE, "true"), 0);
      assert.equal(sampleValue(samples, "receiptd_queue_up", { queue: SETTLEMENTS_QUEUE }), 1);
      assert.equal(
        sampleValue(samples, "receiptd_queue_jobs", { queue: ANCHORS_QUEUE, state: "waiting" }),
        0,
      );
      assert.equal(
        sampleValue(samples, "receiptd_store_errors_total", {
          operation: "get",
          kind: "unavailable",
        }),
        0,
      );
      assert.ok(samplesOf(samples, "process_resident_memory_bytes").length === 1);
      // A worker has no HTTP API: no request or verdict figures.
      assert.equal(samplesOf(samples, "receiptd_verdicts_total").length, 0);
    } finally {
      worker.child.kill("SIGTERM");
    }
    const [code] = await exited;
    assert.equal(code, 0, "the worker stops cleanly on SIGTERM, its metrics listener with it");
  });
});
