/**
 * `npm run bench`: starts receiptd (embedded by default, `--distributed` for Redis,
 * PostgreSQL and BullMQ workers), measures the all-core Ed25519 ceiling, then drives every
 * scenario over real HTTP — against receiptd, the floor server (floor-server.ts, for the
 * verification scenarios) and each `--target` deployment, one after the other with the same
 * client — and writes a table, JSON and an SVG chart.
 */
import { availableParallelism, cpus, platform, totalmem } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { isParseArgsError, usageErrorText } from "../src/cli/entry.js";
import {
  BULK_SCENARIO_IDS,
  BULK_SIZES,
  type BulkInputs,
  type BulkScenarioId,
  batch50Rate,
  bulkInputs,
  CLI_TARGET,
  measureBulkLocal,
  measureBulkRemote,
  measureBulkRss,
} from "./bulk-scenarios.js";
import { measureCeiling, measureMinimalVerifier, minimalVerifierOf } from "./ceiling.js";
import { signaturesOf } from "./fixtures.js";
import { runLoad } from "./load.js";
import {
  compareWithPrevious,
  newestRecordedRun,
  previousRunSummary,
  readRecordedRun,
} from "./previous-run.js";
import { renderTable, writeReport } from "./report.js";
import {
  benchBundle,
  type Deployment,
  SCENARIOS,
  type Scenario,
  verificationBundles,
} from "./scenarios.js";
import {
  PeakRss,
  type RunningFloor,
  type ServiceProcess,
  startFloorProcess,
  startServiceProcess,
} from "./service-process.js";
import { CpuMeter } from "./thread-cpu.js";
import { type DiscardingReceiver, startDiscardingReceiver, tracingRatioLines } from "./tracing.js";
import type {
  BenchRun,
  CeilingMeasurement,
  MinimalVerifierSample,
  ScenarioResult,
} from "./types.js";

const USAGE = `usage: npm run bench -- [options]

Starts receiptd and measures it over HTTP; writes bench/results/latest.{json,svg,md}.

  --quick                  a short smoke run (about 1 s per scenario)
  --distributed            run receiptd with Redis, PostgreSQL and a BullMQ worker process
                           (REDIS_URL / DATABASE_URL, default the local servers)
  --target URL             also run every scenario against this deployment (repeatable)
  --target-key KEY         API key sent to the targets (x-svc-key)
                           (--target-key and --target-pid: one for every target, or
                           one per --target, in the same order)
  --target-internal-token T   internal token of the targets (settlement ingestion)
  --target-pid PID         the target's process, for its peak RSS (local targets only)
  --no-local               measure only the --target deployments
  --no-floor               skip the floor (bench/floor-server.ts: node:http and worker
                           threads running receiptd's own verification, nothing else),
                           which otherwise answers the verification scenarios too
  --scenarios a,b,...      run only these (${[...SCENARIOS.map((s) => s.id), ...BULK_SCENARIO_IDS].join(", ")})
  --bulk-bundles N         bundles of bulk-local and bulk-remote (default ${BULK_SIZES.full.bundles}; quick ${BULK_SIZES.quick.bundles})
  --bulk-rss-lines N       NDJSON lines of bulk-rss (default ${BULK_SIZES.full.rssLines}; quick ${BULK_SIZES.quick.rssLines})
  --seconds N              measured seconds per scenario (default 10; quick 1)
  --connections N          override every scenario's connection count
  --threads N              CPU_THREADS of the receiptd this harness starts (default: cores)
  --out DIR                where results go (default bench/results)
  --previous FILE          a recorded run to give ratios to (default, except with
                           --quick: the newest docs/benchmarks/*.json)
  --no-previous            no ratios to a previous run
  --tracing                also start a second receiptd with tracing on (OTLP/HTTP to a local
                           receiver that discards), run each scenario against both, one
                           after the other, and print tracing on/off as ratios
  --profile DIR            run the service under --cpu-prof: one .cpuprofile per thread
                           (main thread and each worker) in DIR when it stops
  -h, --help
`;

/** A command line the harness cannot run: reported as one line and the usage, exit 2. */
class UsageError extends Error {}

function options() {
  try {
    return parseOptions();
  } catch (error) {
    if (isParseArgsError(error)) throw new UsageError(usageErrorText(error));
    throw error;
  }
}

function parseOptions() {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      distributed: { type: "boolean", default: false },
      target: { type: "string", multiple: true, default: [] },
      "target-key": { type: "string", multiple: true },
      "target-internal-token": { type: "string" },
      "target-pid": { type: "string", multiple: true },
      "no-local": { type: "boolean", default: false },
      "no-floor": { type: "boolean", default: false },
      scenarios: { type: "string" },
      "bulk-bundles": { type: "string" },
      "bulk-rss-lines": { type: "string" },
      seconds: { type: "string" },
      connections: { type: "string" },
      threads: { type: "string" },
      out: { type: "string" },
      previous: { type: "string" },
      "no-previous": { type: "boolean", default: false },
      profile: { type: "string" },
      tracing: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  return values;
}

interface Measured {
  deployment: Deployment;
  pids: { web?: number; worker?: number };
  /** The floor server: it answers only `floor` scenarios and is held to no goal. */
  floor?: boolean;
}

const FLOOR_LABEL = "floor (node:http + workers)";

async function runScenario(
  scenario: Scenario,
  measured: Measured,
  ceiling: CeilingMeasurement,
  timing: { warmupMs: number; durationMs: number },
  connectionsOverride: number | undefined,
): Promise<ScenarioResult> {
  const { deployment, pids } = measured;
  const connections = connectionsOverride ?? scenario.connections;
  const base = {
    scenario: scenario.id,
    title: scenario.title,
    target: deployment.label,
    connections,
    unit: scenario.unit,
  };
  const skipped = await scenario.prepare?.(deployment);
  if (skipped !== undefined) {
    return {
      ...base,
      skipped,
      requests: 0,
      errors: 0,
      seconds: 0,
      requestsPerSecond: 0,
      itemsPerSecond: 0,
      latencyMs: { p50: 0, p95: 0, p99: 0, max: 0 },
      peakRssMiB: null,
      ceilingRatio: null,
    };
  }
  const cpu =
    pids.web === undefined
      ? null
      : new CpuMeter(pids.worker === undefined ? [pids.web] : [pids.web, pids.worker]);
  const webRss = pids.web === undefined ? null : new PeakRss(pids.web);
  const workerRss = pids.worker === undefined ? null : new PeakRss(pids.worker);
  webRss?.start();
  workerRss?.start();
  const load = await runLoad({
    origin: deployment.origin,
    connections,
    ...timing,
    request: (n) => scenario.request(n, deployment),
    accept: (status, body, spec) => scenario.accept(status, body, spec),
    onMeasureStart: () => cpu?.start(),
  });
  const cpuMicrosPerItem = cpu?.stop(load.requests * scenario.itemsPerRequest) ?? null;
  const peakRssMiB = webRss?.stop() ?? null;
  const workerPeakRssMiB = workerRss?.stop();
  const completed = load.requests - load.errors;
  const requestsPerSecond = completed / load.seconds;
  const result: ScenarioResult = {
    ...base,
    requests: load.requests,
    errors: load.errors,
    seconds: load.seconds,
    requestsPerSecond,
    itemsPerSecond: requestsPerSecond * scenario.itemsPerRequest,
    latencyMs: load.latencyMs,
    peakRssMiB,
    ...(workerPeakRssMiB === undefined ? {} : { workerPeakRssMiB }),
    cpuMicrosPerItem,
    ceilingRatio:
      scenario.verificationsPerRequest === 0
        ? null
        : (requestsPerSecond * scenario.verificationsPerRequest) / ceiling.verificationsPerSecond,
  };
  if (load.firstError !== undefined) {
    console.error(`  ${scenario.id} @ ${deployment.label}: first error: ${load.firstError}`);
  }
  const goal = measured.floor ? undefined : scenario.goal?.(result, deployment);
  return goal === undefined ? result : { ...result, goal };
}

async function main(): Promise<number> {
  try {
    return await runBench();
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}\n${USAGE}`);
    return 2;
  }
}

async function runBench(): Promise<number> {
  const args = options();
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const seconds = positiveNumber(args.seconds, "--seconds") ?? (args.quick ? 1 : 10);
  const timing = {
    warmupMs: args.quick ? 300 : Math.min(2_000, seconds * 200),
    durationMs: seconds * 1000,
  };
  const wanted = args.scenarios?.split(",").map((id) => id.trim());
  const known = new Set<string>([...SCENARIOS.map((s) => s.id), ...BULK_SCENARIO_IDS]);
  const unknown = wanted?.filter((id) => !known.has(id)) ?? [];
  if (unknown.length > 0) throw new UsageError(`unknown scenario(s): ${unknown.join(", ")}`);
  const targets = args.target.map(targetOrigin);
  const targetKey = perTarget(args["target-key"], "--target-key", targets.length);
  const targetPid = perTarget(args["target-pid"], "--target-pid", targets.length);
  const scenarios = SCENARIOS.filter((s) => wanted === undefined || wanted.includes(s.id));
  const mode = args.distributed ? "distributed" : "embedded";
  const connections = positiveInteger(args.connections, "--connections");
  const threads = positiveInteger(args.threads, "--threads");
  const bulkSizes = args.quick ? BULK_SIZES.quick : BULK_SIZES.full;
  const bulk = {
    ids: BULK_SCENARIO_IDS.filter((id) => wanted === undefined || wanted.includes(id)),
    bundles: positiveInteger(args["bulk-bundles"], "--bulk-bundles") ?? bulkSizes.bundles,
    rssLines: positiveInteger(args["bulk-rss-lines"], "--bulk-rss-lines") ?? bulkSizes.rssLines,
  };

  console.log("measuring the Ed25519 ceilings (libsodium, then OpenSSL) on every core …");
  const ceilingMs = args.quick ? 500 : 3_000;
  const ceilingSignatures = signaturesOf(benchBundle);
  const ceiling = await measureCeiling(ceilingSignatures, ceilingMs);
  const opensslCeiling = await measureCeiling(ceilingSignatures, ceilingMs, undefined, "openssl");
  // Issue 33's minimal verifier, before, between and after the scenarios (the highest is the
  // bar): the machine's speed drifts within a run, and the bar should be its fastest moment.
  const minimalSamples: MinimalVerifierSample[] = [];
  const sampleMinimalVerifier = async () => {
    console.log("measuring the minimal verifier on every core …");
    minimalSamples.push(await measureMinimalVerifier(verificationBundles, ceilingMs));
  };
  await sampleMinimalVerifier();

  let local: ServiceProcess | undefined;
  let traced: ServiceProcess | undefined;
  let receiver: DiscardingReceiver | undefined;
  let floor: RunningFloor | undefined;
  const localLabel = `receiptd (${mode})`;
  const tracedLabel = `receiptd (${mode}, traced)`;
  const deployments: Measured[] = [];
  try {
    if (!args["no-local"]) {
      console.log(`starting receiptd (${mode}) …`);
      local = await startServiceProcess({
        distributed: args.distributed,
        ...(args.profile === undefined
          ? {}
          : { nodeOptions: ["--cpu-prof", `--cpu-prof-dir=${resolve(args.profile)}`] }),
        ...(threads === undefined ? {} : { env: { CPU_THREADS: String(threads) } }),
      });
      deployments.push({
        deployment: {
          label: localLabel,
          origin: local.origin,
          apiKey: local.apiKey,
          internalToken: local.internalToken,
          mode,
        },
        pids: local.pids,
      });
    }
    if (!args["no-local"] && args.tracing) {
      receiver = await startDiscardingReceiver();
      console.log(`starting receiptd (${mode}) with tracing on, exporting to ${receiver.url} …`);
      traced = await startServiceProcess({
        distributed: args.distributed,
        env: {
          ...(threads === undefined ? {} : { CPU_THREADS: String(threads) }),
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        },
      });
      deployments.push({
        deployment: {
          label: tracedLabel,
          origin: traced.origin,
          apiKey: traced.apiKey,
          internalToken: traced.internalToken,
          mode,
        },
        pids: traced.pids,
      });
    }
    if (!args["no-local"] && !args["no-floor"] && scenarios.some((s) => s.floor === true)) {
      console.log("starting the floor server …");
      floor = await startFloorProcess(threads ?? availableParallelism());
      deployments.push({
        deployment: { label: FLOOR_LABEL, origin: floor.origin, mode: "embedded" },
        pids: { web: floor.pid },
        floor: true,
      });
    }
    for (const [i, origin] of targets.entries()) {
      const pid = targetPid(i) === undefined ? undefined : Number(targetPid(i));
      const apiKey = targetKey(i);
      deployments.push({
        deployment: {
          label: origin,
          origin,
          mode: await deploymentMode(origin),
          ...(apiKey === undefined ? {} : { apiKey }),
          ...(args["target-internal-token"] === undefined
            ? {}
            : { internalToken: args["target-internal-token"] }),
        },
        pids: pid === undefined ? {} : { web: pid },
      });
    }
    if (deployments.length === 0) {
      console.error("nothing to measure: --no-local needs at least one --target");
      return 2;
    }

    const results: ScenarioResult[] = [];
    const halfway = Math.floor(scenarios.length / 2);
    for (const [index, scenario] of scenarios.entries()) {
      if (index === halfway && index > 0) await sampleMinimalVerifier();
      for (const measured of deployments) {
        if (measured.floor && scenario.floor !== true) continue;
        console.log(`  ${scenario.id} @ ${measured.deployment.label} …`);
        results.push(await runScenario(scenario, measured, ceiling, timing, connections));
      }
    }
    if (bulk.ids.length > 0) {
      results.push(
        ...(await runBulkScenarios(bulk, {
          deployments: deployments.filter((measured) => !measured.floor),
          local: !args["no-local"],
          ceiling,
          timing,
          earlier: results,
        })),
      );
    }
    await sampleMinimalVerifier();
    // A quick run understates the hot paths (docs/benchmarks.md): no default baseline for it.
    const previousFile =
      args["no-previous"] || (args.quick && args.previous === undefined)
        ? null
        : (args.previous ??
          newestRecordedRun(fileURLToPath(new URL(recordedRunsDirectory(), import.meta.url))));
    const previous = previousFile === null ? null : readRecordedRun(previousFile);
    const run: BenchRun = {
      startedAt: new Date().toISOString(),
      quick: args.quick,
      mode,
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? "unknown",
        node: process.version,
        platform: `${platform()} ${process.arch}`,
        memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
      },
      ceiling,
      opensslCeiling,
      minimalVerifier: minimalVerifierOf(minimalSamples),
      ...(previous === null || previousFile === null
        ? {}
        : { previous: previousRunSummary(previousFile, previous) }),
      results: previous === null ? results : compareWithPrevious(results, previous),
    };
    const outDir = args.out ?? fileURLToPath(new URL(resultsDirectory(), import.meta.url));
    const written = writeReport(run, outDir);
    console.log(`\n${renderTable(run)}`);
    if (receiver !== undefined) {
      console.log(`\n${tracingRatioLines(results, localLabel, tracedLabel).join("\n")}`);
      console.log(`(the traced service sent ${receiver.exports()} OTLP export requests)`);
    }
    console.log(
      `\nwritten: ${written.json}\n         ${written.svg}\n         ${written.markdown}`,
    );
    // A failed or skipped scenario of the service started here means the harness or the
    // service is broken (the smoke run in `npm test` relies on this); goals never fail a run.
    const broken = results.filter(
      (result) =>
        result.errors > 0 ||
        (result.skipped !== undefined &&
          (result.target === localLabel ||
            result.target === tracedLabel ||
            result.target === CLI_TARGET)),
    );
    for (const result of broken) {
      console.error(
        `FAILED: ${result.scenario} @ ${result.target}: ${result.skipped ?? `${result.errors} errors`}`,
      );
    }
    return broken.length > 0 ? 1 : 0;
  } finally {
    await Promise.all([local?.stop(), traced?.stop(), floor?.stop()]);
    await receiver?.close();
  }
}

/**
 * The bulk scenarios (bulk-scenarios.ts): `receiptd verify` as a process, after the HTTP
 * scenarios. bulk-local and bulk-rss need no server (they run unless --no-local);
 * bulk-remote runs against each deployment, beside its batch-50 rate from this run (or
 * measured here when batch-50 was not run). A CLI that fails is a skipped row.
 */
async function runBulkScenarios(
  bulk: { ids: BulkScenarioId[]; bundles: number; rssLines: number },
  context: {
    deployments: Measured[];
    local: boolean;
    ceiling: CeilingMeasurement;
    timing: { warmupMs: number; durationMs: number };
    earlier: readonly ScenarioResult[];
  },
): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  const attempt = async (
    scenario: BulkScenarioId,
    target: string,
    measure: () => Promise<ScenarioResult>,
  ) => {
    console.log(`  ${scenario} @ ${target} …`);
    try {
      results.push(await measure());
    } catch (error) {
      results.push(skippedBulk(scenario, target, error));
    }
  };
  let inputs: BulkInputs | undefined;
  try {
    if (bulk.ids.includes("bulk-local") || bulk.ids.includes("bulk-remote")) {
      inputs = await bulkInputs(bulk.bundles);
    }
    const shared = inputs;
    if (shared !== undefined && context.local && bulk.ids.includes("bulk-local")) {
      await attempt("bulk-local", CLI_TARGET, () => measureBulkLocal(shared, context.ceiling));
    }
    if (shared !== undefined && bulk.ids.includes("bulk-remote")) {
      for (const { deployment, pids } of context.deployments) {
        await attempt("bulk-remote", deployment.label, async () => {
          const batch50 = context.earlier.find(
            (result) =>
              result.scenario === "batch-50" &&
              result.target === deployment.label &&
              result.skipped === undefined &&
              result.errors === 0 &&
              // A quick run's second may end before a batch is answered.
              result.itemsPerSecond > 0,
          );
          const batchRate =
            batch50?.itemsPerSecond ?? (await batch50Rate(deployment, context.timing));
          const rss = pids.web === undefined ? null : new PeakRss(pids.web);
          rss?.start();
          return measureBulkRemote(shared, deployment, batchRate, context.ceiling, () =>
            rss === null ? null : rss.stop(),
          );
        });
      }
    }
    if (context.local && bulk.ids.includes("bulk-rss")) {
      await attempt("bulk-rss", CLI_TARGET, () => measureBulkRss(bulk.rssLines, context.ceiling));
    }
  } finally {
    await inputs?.close();
  }
  return results;
}

function skippedBulk(scenario: BulkScenarioId, target: string, error: unknown): ScenarioResult {
  return {
    scenario,
    title: scenario,
    target,
    kind: "cli",
    skipped: error instanceof Error ? error.message : String(error),
    connections: 0,
    requests: 0,
    errors: 0,
    seconds: 0,
    requestsPerSecond: 0,
    unit: "bundles",
    itemsPerSecond: 0,
    latencyMs: { p50: 0, p95: 0, p99: 0, max: 0 },
    peakRssMiB: null,
    ceilingRatio: null,
  };
}

/**
 * The value of a per-target option for target `i`: one value is every target's, several are
 * paired with the `--target`s in order.
 */
function perTarget(
  values: string[] | undefined,
  name: string,
  targets: number,
): (i: number) => string | undefined {
  const given = values ?? [];
  if (given.length > 1 && given.length !== targets) {
    throw new UsageError(`${name} is given ${given.length} times for ${targets} --target(s)`);
  }
  return (i) => (given.length === 1 ? given[0] : given[i]);
}

/** A deployment reports Redis or a database in `/health` exactly when it runs distributed. */
async function deploymentMode(origin: string): Promise<Deployment["mode"]> {
  try {
    const response = await fetch(`${origin}/health`);
    const health = (await response.json()) as Record<string, unknown>;
    return "redis" in health || "db" in health ? "distributed" : "embedded";
  } catch {
    return "embedded";
  }
}

function positiveInteger(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(`${flag} must be a whole number ≥ 1, got '${text}'`);
  }
  return value;
}

function targetOrigin(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--target must be an http(s) URL, got '${url}'`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new UsageError(`--target must be an http(s) URL, got '${url}'`);
  }
  return parsed.origin;
}

function positiveNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const value = text.trim() === "" ? Number.NaN : Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(`${flag} must be a number > 0, got '${text}'`);
  }
  return value;
}

/** `docs/benchmarks/` of the repository, from bench/ (tsx) or dist/bench/ (built). */
function recordedRunsDirectory(): string {
  return import.meta.url.includes("/dist/bench/")
    ? "../../docs/benchmarks/"
    : "../docs/benchmarks/";
}

/** `bench/results/` of the repository, from bench/ (tsx) or dist/bench/ (built). */
function resultsDirectory(): string {
  return import.meta.url.includes("/dist/bench/") ? "../../bench/results/" : "./results/";
}

process.exitCode = await main();
