/**
 * The bulk scenarios of issue 35: `receiptd verify` run as a process, each measured side by
 * side with its reference in the same run (docs/benchmarks.md, "Bulk verification"). They are
 * rows of `npm run bench`'s table (run.ts) and the whole of `npm run bench:bulk` (bulk.ts).
 *
 * - `bulk-local`: `receiptd verify --ndjson` over N bundles (worker threads, one per core)
 *   against the library's own all-core rate: one worker thread per core looping
 *   `verifyBundleBytes` over the same bundles. Goal ≥ 85%.
 * - `bulk-remote`: `receiptd verify --remote` over the same bundles against a deployment,
 *   against that deployment's `batch-50` rate. Goal ≥ 85%.
 * - `bulk-rss`: the CLI's peak RSS over a generated NDJSON file (1,000,000 lines by default,
 *   written to a temporary directory, never committed). Goal ≤ 150 MB.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { batchBody, generatedBundle, writeBundleNdjson } from "./fixtures.js";
import { runLoad } from "./load.js";
import type { Deployment } from "./scenarios.js";
import type { CeilingMeasurement, ScenarioResult } from "./types.js";

export const BULK_SCENARIO_IDS = ["bulk-local", "bulk-remote", "bulk-rss"] as const;
export type BulkScenarioId = (typeof BULK_SCENARIO_IDS)[number];

export interface BulkSizes {
  /** Bundles of `bulk-local` and `bulk-remote`. */
  bundles: number;
  /** Lines of `bulk-rss`'s input. */
  rssLines: number;
}

/** The issue's sizes, and the smoke run's (`--quick`, part of `npm test`). */
export const BULK_SIZES: { full: BulkSizes; quick: BulkSizes } = {
  full: { bundles: 20_000, rssLines: 1_000_000 },
  quick: { bundles: 400, rssLines: 4_000 },
};

/** The target label of the rows that run no server: the RSS column is then the CLI's. */
export const CLI_TARGET = "receiptd verify (CLI)";

const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");
const ext = RUNNING_FROM_SOURCE ? "ts" : "js";
const RECEIPTD = fileURLToPath(new URL(`../src/cli/receiptd.${ext}`, import.meta.url));
const VERIFY_DOCUMENT = new URL(`../src/verifier/bundle/verify-document.${ext}`, import.meta.url);
const NODE_ARGS = RUNNING_FROM_SOURCE ? ["--import", "tsx"] : [];
const DISTINCT = 64;
/** Six receipts, as the batch-50 scenario's bundles. */
const RECEIPTS = 6;
const LOCAL_GOAL = 0.85;
const REMOTE_GOAL = 0.85;
const RSS_GOAL_MB = 150;
const BYTES_PER_MIB = 2 ** 20;

function distinctBundles(): Buffer[] {
  return Array.from({ length: DISTINCT }, (_, at) =>
    Buffer.from(JSON.stringify(JSON.parse(Buffer.from(generatedBundle(RECEIPTS, at)).toString()))),
  );
}

interface CliRun {
  seconds: number;
  /** Peak RSS of the CLI process (VmHWM), MiB; null off Linux. */
  peakRssMiB: number | null;
  /** Every bundle TRUSTED (exit 0). */
  allTrusted: boolean;
}

function highWaterMiB(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
    return kib === undefined ? null : Number(kib) / 1024;
  } catch {
    return null;
  }
}

/** Runs `receiptd verify` with `args`; its peak RSS is its own high-water mark, polled. */
async function runCli(args: string[]): Promise<CliRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [...NODE_ARGS, RECEIPTD, "verify", ...args], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const pid = child.pid as number;
  let peak: number | null = null;
  // VmHWM only grows and is gone once the process exits: the last reading is the peak but
  // for the final 20 ms (the process only shuts down then).
  const timer = setInterval(() => {
    const now = highWaterMiB(pid);
    if (now !== null) peak = Math.max(peak ?? 0, now);
  }, 20);
  const [code] = await once(child, "exit");
  clearInterval(timer);
  if (code !== 0 && code !== 1) throw new Error(`receiptd verify exited ${code}`);
  return {
    seconds: (performance.now() - started) / 1000,
    peakRssMiB: peak,
    allTrusted: code === 0,
  };
}

/** The library's all-core rate: one thread per core looping verifyBundleBytes, bundles/s. */
export async function libraryRate(distinct: readonly Buffer[], total: number): Promise<number> {
  const threads = availableParallelism();
  const share = Math.ceil(total / threads);
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    ${RUNNING_FROM_SOURCE ? `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))}).then((tsx) => tsx.register()).then(() => ` : "Promise.resolve().then(() => "}
      import(${JSON.stringify(VERIFY_DOCUMENT.href)})).then(({ verifyBundleBytes }) => {
      parentPort.once("message", () => {
        for (let at = 0; at < workerData.count; at += 1) {
          verifyBundleBytes(workerData.bundles[at % workerData.bundles.length], { universalNewlines: true });
        }
        parentPort.postMessage("done");
      });
      parentPort.postMessage("ready");
    });`;
  const workers = Array.from(
    { length: threads },
    () => new Worker(source, { eval: true, workerData: { bundles: distinct, count: share } }),
  );
  await Promise.all(workers.map((worker) => once(worker, "message")));
  const started = performance.now();
  for (const worker of workers) worker.postMessage("go");
  await Promise.all(workers.map((worker) => once(worker, "message")));
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(workers.map((worker) => worker.terminate()));
  return (share * threads) / seconds;
}

/** The batch-50 rate of `deployment` (4 connections, as scenarios.ts's), bundles/s. */
export async function batch50Rate(
  deployment: Deployment,
  timing: { warmupMs: number; durationMs: number },
): Promise<number> {
  const distinct = distinctBundles();
  const batches = Array.from({ length: 8 }, (_, b) =>
    batchBody(Array.from({ length: 50 }, (_, at) => distinct[(b * 50 + at) % DISTINCT] as Buffer)),
  );
  const load = await runLoad({
    origin: deployment.origin,
    connections: 4,
    ...timing,
    request: (n) => ({
      method: "POST",
      path: "/verify",
      headers: {
        "content-type": "application/json",
        ...(deployment.apiKey === undefined ? {} : { "x-svc-key": deployment.apiKey }),
      },
      body: batches[n % batches.length] as Buffer,
    }),
    accept: (status) => status === 200,
  });
  return ((load.requests - load.errors) * 50) / load.seconds;
}

function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

function wholeNumber(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}

/** A CLI run as a table row: one "request" per bundle, no latency (kind `cli`). */
function cliResult(
  fields: Pick<ScenarioResult, "scenario" | "title" | "target" | "connections" | "goal"> & {
    count: number;
    run: CliRun;
    ceiling: CeilingMeasurement;
    peakRssMiB: number | null;
    reference?: ScenarioResult["reference"];
  },
): ScenarioResult {
  const { count, run, ceiling, ...rest } = fields;
  const rate = count / run.seconds;
  return {
    scenario: rest.scenario,
    title: rest.title,
    target: rest.target,
    kind: "cli",
    connections: rest.connections,
    requests: count,
    // Every bundle of these inputs is TRUSTED: anything else is the CLI failing them.
    errors: run.allTrusted ? 0 : count,
    seconds: run.seconds,
    requestsPerSecond: rate,
    unit: "bundles",
    itemsPerSecond: rate,
    latencyMs: { p50: 0, p95: 0, p99: 0, max: 0 },
    peakRssMiB: rest.peakRssMiB,
    ceilingRatio: (rate * RECEIPTS) / ceiling.verificationsPerSecond,
    ...(rest.reference === undefined ? {} : { reference: rest.reference }),
    ...(rest.goal === undefined ? {} : { goal: rest.goal }),
  };
}

/** A scratch directory with the bundles' NDJSON; removed by `close`. */
export interface BulkInputs {
  directory: string;
  ndjson: string;
  count: number;
  distinct: Buffer[];
  close(): Promise<void>;
}

export async function bulkInputs(count: number): Promise<BulkInputs> {
  const directory = await mkdtemp(join(tmpdir(), "receiptd-bench-bulk-"));
  const ndjson = join(directory, "bundles.ndjson");
  await writeBundleNdjson(ndjson, count, DISTINCT);
  return {
    directory,
    ndjson,
    count,
    distinct: distinctBundles(),
    close: () => rm(directory, { recursive: true, force: true }),
  };
}

export async function measureBulkLocal(
  inputs: BulkInputs,
  ceiling: CeilingMeasurement,
): Promise<ScenarioResult> {
  const library = await libraryRate(inputs.distinct, inputs.count);
  const run = await runCli(["--ndjson", inputs.ndjson, "--out", join(inputs.directory, "local")]);
  const ratio = inputs.count / run.seconds / library;
  return cliResult({
    scenario: "bulk-local",
    title: `receiptd verify --ndjson, ${wholeNumber(inputs.count)} bundles`,
    target: CLI_TARGET,
    connections: availableParallelism(),
    count: inputs.count,
    run,
    ceiling,
    peakRssMiB: run.peakRssMiB,
    reference: { description: "the library on every core", itemsPerSecond: library },
    goal: {
      description: `≥ 85% of the library's ${wholeNumber(library)}/s: ${percent(ratio)}`,
      met: run.allTrusted && ratio >= LOCAL_GOAL,
    },
  });
}

/**
 * `--remote` against `deployment`; `batchRate` is its batch-50 rate in the same run (bundles/s).
 * The RSS column is the service's, as in every row with a server for its target.
 */
export async function measureBulkRemote(
  inputs: BulkInputs,
  deployment: Deployment,
  batchRate: number,
  ceiling: CeilingMeasurement,
  servicePeakRss: () => number | null,
): Promise<ScenarioResult> {
  const run = await runCli([
    "--ndjson",
    inputs.ndjson,
    "--remote",
    deployment.origin,
    ...(deployment.apiKey === undefined ? [] : ["--key", deployment.apiKey]),
    "--out",
    join(inputs.directory, "remote"),
  ]);
  const ratio = inputs.count / run.seconds / batchRate;
  return cliResult({
    scenario: "bulk-remote",
    title: `receiptd verify --remote, ${wholeNumber(inputs.count)} bundles`,
    target: deployment.label,
    connections: 4,
    count: inputs.count,
    run,
    ceiling,
    peakRssMiB: servicePeakRss(),
    reference: { description: "batch-50", itemsPerSecond: batchRate },
    goal: {
      description: `≥ 85% of batch-50's ${wholeNumber(batchRate)}/s: ${percent(ratio)}`,
      met: run.allTrusted && ratio >= REMOTE_GOAL,
    },
  });
}

export async function measureBulkRss(
  lines: number,
  ceiling: CeilingMeasurement,
): Promise<ScenarioResult> {
  const inputs = await bulkInputs(lines);
  try {
    const run = await runCli(["--ndjson", inputs.ndjson, "--out", join(inputs.directory, "rss")]);
    const megabytes = run.peakRssMiB === null ? null : (run.peakRssMiB * BYTES_PER_MIB) / 1e6;
    return cliResult({
      scenario: "bulk-rss",
      title: `receiptd verify --ndjson, ${wholeNumber(lines)} lines (peak RSS)`,
      target: CLI_TARGET,
      connections: availableParallelism(),
      count: lines,
      run,
      ceiling,
      peakRssMiB: run.peakRssMiB,
      goal: {
        description: `peak RSS ≤ ${RSS_GOAL_MB} MB`,
        met: run.allTrusted && megabytes !== null && megabytes <= RSS_GOAL_MB,
      },
    });
  } finally {
    await inputs.close();
  }
}
