/**
 * `npm run bench:bulk`: the bulk scenarios of issue 35, each measured side by side with its
 * reference in the same run (docs/benchmarks.md, "Bulk verification"):
 *
 * - `bulk-local`: `receiptd verify --ndjson` over 20,000 bundles (worker threads, one per
 *   core) against the library's own all-core rate: one worker thread per core looping
 *   `verifyBundleBytes` over the same bundles. Goal ≥ 85%.
 * - `bulk-remote`: `receiptd verify --remote` over the same bundles against a local
 *   `receiptd serve`, against that server's `batch-50` scenario rate. Goal ≥ 85%.
 * - `bulk-rss`: the CLI's peak RSS over a generated 1,000,000-line NDJSON file (written to a
 *   temporary directory, never committed). Goal ≤ 150 MB.
 *
 *   node dist/bench/bulk.js [--scenarios a,b] [--bundles N] [--rss-lines N] [--seconds N]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { batchBody, generatedBundle } from "./fixtures.js";
import { runLoad } from "./load.js";
import { PeakRss, startServiceProcess } from "./service-process.js";

const SCENARIO_IDS = ["bulk-local", "bulk-remote", "bulk-rss"] as const;
type ScenarioId = (typeof SCENARIO_IDS)[number];
const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");
const ext = RUNNING_FROM_SOURCE ? "ts" : "js";
const RECEIPTD = fileURLToPath(new URL(`../src/cli/receiptd.${ext}`, import.meta.url));
const VERIFY_DOCUMENT = new URL(`../src/verifier/bundle/verify-document.${ext}`, import.meta.url);
const NODE_ARGS = RUNNING_FROM_SOURCE ? ["--import", "tsx"] : [];
const DISTINCT = 64;
/** Six receipts, as the batch-50 scenario's bundles. */
const RECEIPTS = 6;

function bundles(): Buffer[] {
  return Array.from({ length: DISTINCT }, (_, at) =>
    Buffer.from(JSON.stringify(JSON.parse(Buffer.from(generatedBundle(RECEIPTS, at)).toString()))),
  );
}

async function writeNdjson(
  path: string,
  lines: number,
  distinct: readonly Buffer[],
): Promise<void> {
  const out = createWriteStream(path);
  for (let at = 0; at < lines; at += 1) {
    if (!out.write(Buffer.concat([distinct[at % distinct.length] as Buffer, Buffer.from("\n")]))) {
      await once(out, "drain");
    }
  }
  out.end();
  await once(out, "finish");
}

/** Runs the CLI; resolves with its wall time and peak RSS (MiB). */
async function runCli(args: string[]): Promise<{ seconds: number; peakRssMiB: number | null }> {
  const started = performance.now();
  const child = spawn(process.execPath, [...NODE_ARGS, RECEIPTD, "verify", ...args], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const rss = new PeakRss(child.pid as number);
  rss.start();
  const [code] = await once(child, "exit");
  const peakRssMiB = rss.stop();
  if (code !== 0 && code !== 1) throw new Error(`receiptd verify exited ${code}`);
  return { seconds: (performance.now() - started) / 1000, peakRssMiB };
}

/** The library's all-core rate: one thread per core looping verifyBundleBytes, bundles/s. */
async function libraryRate(distinct: readonly Buffer[], total: number): Promise<number> {
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

interface Figure {
  scenario: ScenarioId;
  measured: string;
  reference: string;
  ratio: number | null;
  goal: string;
  met: boolean;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenarios: { type: "string" },
      bundles: { type: "string", default: "20000" },
      "rss-lines": { type: "string", default: "1000000" },
      seconds: { type: "string", default: "10" },
    },
  });
  const wanted = (values.scenarios?.split(",") ?? [...SCENARIO_IDS]) as ScenarioId[];
  const count = Number(values.bundles);
  const rssLines = Number(values["rss-lines"]);
  const seconds = Number(values.seconds);
  const scratch = await mkdtemp(join(tmpdir(), "receiptd-bench-bulk-"));
  const distinct = bundles();
  const figures: Figure[] = [];
  try {
    const input = join(scratch, "bundles.ndjson");
    await writeNdjson(input, count, distinct);
    if (wanted.includes("bulk-local")) {
      console.log(`bulk-local: the library on every core, then the CLI, ${count} bundles …`);
      const library = await libraryRate(distinct, count);
      const cli = await runCli(["--ndjson", input, "--out", join(scratch, "local.out")]);
      const rate = count / cli.seconds;
      figures.push({
        scenario: "bulk-local",
        measured: `${Math.round(rate)} bundles/s (CLI, ${availableParallelism()} threads)`,
        reference: `${Math.round(library)} bundles/s (library, all cores)`,
        ratio: rate / library,
        goal: "≥ 85% of the library",
        met: rate / library >= 0.85,
      });
    }
    if (wanted.includes("bulk-remote")) {
      console.log("bulk-remote: starting receiptd …");
      const service = await startServiceProcess({ distributed: false });
      try {
        const batches = Array.from({ length: 8 }, (_, b) =>
          batchBody(
            Array.from({ length: 50 }, (_, at) => distinct[(b * 50 + at) % DISTINCT] as Buffer),
          ),
        );
        console.log(`bulk-remote: batch-50 for ${seconds} s …`);
        const load = await runLoad({
          origin: service.origin,
          connections: 4,
          warmupMs: 1_000,
          durationMs: seconds * 1000,
          request: (n) => ({
            method: "POST",
            path: "/verify",
            headers: { "content-type": "application/json", "x-svc-key": service.apiKey },
            body: batches[n % batches.length] as Buffer,
          }),
          accept: (status) => status === 200,
        });
        const batchRate = (load.requests * 50) / load.seconds;
        console.log(`bulk-remote: the CLI over ${count} bundles …`);
        const cli = await runCli([
          "--ndjson",
          input,
          "--remote",
          service.origin,
          "--key",
          service.apiKey,
          "--out",
          join(scratch, "remote.out"),
        ]);
        const rate = count / cli.seconds;
        figures.push({
          scenario: "bulk-remote",
          measured: `${Math.round(rate)} bundles/s (CLI --remote, 4 batches in flight)`,
          reference: `${Math.round(batchRate)} bundles/s (batch-50, 4 connections)`,
          ratio: rate / batchRate,
          goal: "≥ 85% of batch-50",
          met: rate / batchRate >= 0.85,
        });
      } finally {
        await service.stop();
      }
    }
    if (wanted.includes("bulk-rss")) {
      const big = join(scratch, "million.ndjson");
      console.log(`bulk-rss: writing ${rssLines} lines, then the CLI over them …`);
      await writeNdjson(big, rssLines, distinct);
      const cli = await runCli(["--ndjson", big, "--out", join(scratch, "rss.out")]);
      figures.push({
        scenario: "bulk-rss",
        measured: `${cli.peakRssMiB ?? "?"} MiB peak RSS over ${rssLines} lines (${Math.round(rssLines / cli.seconds)} bundles/s)`,
        reference: "150 MB",
        ratio: null,
        goal: "≤ 150 MB",
        met: cli.peakRssMiB !== null && cli.peakRssMiB * 1.048576 <= 150,
      });
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  for (const figure of figures) {
    const ratio = figure.ratio === null ? "" : ` = ${(figure.ratio * 100).toFixed(1)}%`;
    console.log(
      `${figure.scenario}: ${figure.measured} vs ${figure.reference}${ratio} (goal ${figure.goal}: ${figure.met ? "met" : "NOT met"})`,
    );
  }
}

await main();
