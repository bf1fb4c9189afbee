#!/usr/bin/env node
// Runs the suite, or one lane of it, with Node's test runner (Node 20 takes no globs, so the
// file list is gathered here).
//
//   node scripts/run-tests.mjs [--lane unit|service|distributed|all] [--depth sample|full] [files…]
//
// A test file's lane follows from what it imports, so no list has to be kept by hand:
// - distributed: it reaches Redis, PostgreSQL or BullMQ (their test supports);
// - service: it builds the HTTP app, or starts a process from dist/ (needs `npm run build`);
// - unit: everything else — no build, no Redis, no PostgreSQL, no child process.
// Imports are followed through test/ files (supports, contract suites), not into src/.
//
// Depth (issue 37): the long generated runs (the crypto differentials, the JSON splice
// differential) run a seed-fixed sample in the unit lane, the lane a developer runs in their
// loop, and the whole of it everywhere else: `npm test`, the other lanes, named files. The
// tests read it from RECEIPTD_TEST_DEPTH (test/support/depth.ts); `--depth` or that variable,
// when given, decide instead.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { missingChromium } from "./chromium.mjs";

const LANES = ["unit", "service", "distributed"];

/** Test supports whose import means a lane. */
const DISTRIBUTED_SUPPORTS = [
  "test/redis/support.ts",
  "test/support/pg.ts",
  "test/support/bullmq-redis.ts",
];
const SERVICE_SUPPORTS = ["test/service/support/service.ts", "src/service/app.ts"];
/** The test support that launches Chromium. */
const BROWSER_SUPPORT = "bench/support/chromium.ts";
/** Source text that starts a process or reads the build. */
const SERVICE_TEXT = /\bspawn(Sync)?\(|\bexecFile(Sync)?\(|\bfork\(|["'`/]dist\//;

function collect(dir) {
  const files = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...collect(path));
    else if (name.endsWith(".test.ts")) files.push(path);
  }
  return files;
}

const IMPORT = /(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

function localImports(file) {
  const text = readFileSync(file, "utf8");
  const found = [];
  for (const match of text.matchAll(IMPORT)) {
    const target = normalize(join(dirname(file), match[1])).replace(/\.js$/, ".ts");
    found.push(relative(".", target));
  }
  return { text, imports: found };
}

/** What one test file reaches: the files it imports (followed through test/) and its lane. */
function reach(file) {
  const seen = new Set();
  const queue = [relative(".", file)];
  let lane = "unit";
  while (queue.length > 0) {
    const current = queue.pop();
    if (seen.has(current) || !existsSync(current)) continue;
    seen.add(current);
    if (DISTRIBUTED_SUPPORTS.includes(current)) lane = "distributed";
    if (SERVICE_SUPPORTS.includes(current) && lane === "unit") lane = "service";
    if (!current.startsWith("test/")) continue;
    const { text, imports } = localImports(current);
    if (SERVICE_TEXT.test(text) && lane === "unit") lane = "service";
    queue.push(...imports);
  }
  return { lane, files: seen };
}

/** The lane of one test file: the most demanding one anything it reaches needs. */
function laneOf(file) {
  return reach(file).lane;
}

const args = process.argv.slice(2);
let lane = "all";
const laneAt = args.indexOf("--lane");
if (laneAt !== -1) {
  lane = args[laneAt + 1] ?? "";
  args.splice(laneAt, 2);
}
if (lane !== "all" && !LANES.includes(lane)) {
  console.error(`run-tests: unknown lane '${lane}' (unit, service, distributed or all)`);
  process.exit(2);
}
const DEPTHS = ["sample", "full"];
let depth = process.env.RECEIPTD_TEST_DEPTH || (lane === "unit" ? "sample" : "full");
const depthAt = args.indexOf("--depth");
if (depthAt !== -1) {
  depth = args[depthAt + 1] ?? "";
  args.splice(depthAt, 2);
}
if (!DEPTHS.includes(depth)) {
  console.error(`run-tests: unknown depth '${depth}' (sample or full)`);
  process.exit(2);
}
if (args.includes("--list")) {
  for (const file of collect("test")) console.log(`${laneOf(file).padEnd(12)} ${file}`);
  process.exit(0);
}

const files =
  args.length > 0
    ? args
    : collect("test").filter((file) => lane === "all" || laneOf(file) === lane);

// The browser tests need a Chromium; without one, say so in one line before anything runs.
if (files.some((file) => reach(file).files.has(BROWSER_SUPPORT))) {
  const missing = missingChromium();
  if (missing !== null) {
    console.error(`run-tests: ${missing}`);
    process.exit(1);
  }
}

// Redis and PostgreSQL: the running ones, or started here when they are down.
if (lane === "all" || lane === "distributed") {
  const services = spawnSync(process.execPath, ["scripts/ensure-services.mjs"], {
    stdio: "inherit",
  });
  if (services.status !== 0) process.exit(services.status ?? 1);
}

// A test that hangs must fail the run, not hold CI until its own limit: each test has
// TEST_TIMEOUT_MS, and the whole run RUN_TIMEOUT_MS (the suite takes about 10 minutes on two
// loaded cores).
const TEST_TIMEOUT_MS = 300_000;
const RUN_TIMEOUT_MS = 40 * 60_000;
const result = spawnSync(
  process.execPath,
  [
    "--import",
    "tsx",
    "--test",
    "--test-reporter=spec",
    `--test-timeout=${TEST_TIMEOUT_MS}`,
    ...files,
  ],
  {
    stdio: "inherit",
    timeout: RUN_TIMEOUT_MS,
    killSignal: "SIGKILL",
    env: { ...process.env, RECEIPTD_TEST_DEPTH: depth },
  },
);
if (result.error) console.error(`run-tests: ${result.error.message}`);
process.exit(result.status ?? 1);
