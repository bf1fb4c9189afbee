/**
 * `receiptd worker`: the queue consumer of distributed mode (Procfile `worker:`). It runs the
 * anchors and settlements jobs that web processes (and external producers) put on BullMQ,
 * writing to the same document store and signing settlement receipts with the same service
 * key as the web processes.
 */
import { ANCHORS_QUEUE } from "../../queues/anchors.js";
import { type QueueWorker, startReceiptdWorkers } from "../../queues/bullmq-worker.js";
import { SETTLEMENTS_QUEUE } from "../../queues/settlements.js";
import type { MetricsListenerConfig } from "../metrics/server.js";
import { startWorkerMetrics } from "../metrics/worker.js";
import { redisTargetOf } from "../redis/target.js";
import {
  ConfigError,
  DEFAULT_WORKER_SETTINGS,
  loadConfig,
  metricsListenerFrom,
  type ServiceConfig,
} from "../service/config.js";
import { environmentHelp } from "../service/config-reference.js";
import { ed25519Summary } from "../service/ed25519-summary.js";
import { loadOrCreateServiceKey, ServiceIdentity } from "../service/service-key.js";
import { openDocumentStore } from "../storage/open.js";
import { startTracing, stopTracing } from "../tracing/tracing.js";
import { type CliIo, processIo } from "./entry.js";
import { jsonLog } from "./json-log.js";
import { parseCommand } from "./parse-command.js";

export const USAGE = "usage: receiptd worker";

const HELP = `${USAGE}

Runs the anchors and settlements queue workers until SIGTERM or SIGINT: it then takes no more
jobs and lets active ones finish (at most WORKER_SHUTDOWN_MS), and a second signal stops at once.
REDIS_URL or REDIS_CLUSTER_NODES is required. A crashed worker's jobs are taken over within about
WORKER_LOCK_DURATION_MS + WORKER_STALLED_INTERVAL_MS.

${environmentHelp("worker")}`;

interface WorkerSettings {
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  shutdownMs: number;
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  if (!/^[1-9][0-9]{0,8}$/.test(text)) {
    throw new ConfigError(`${name} must be a positive integer, got '${text}'`);
  }
  return Number(text);
}

function workerSettings(env: NodeJS.ProcessEnv): WorkerSettings {
  return {
    concurrency: positiveInteger(env, "WORKER_CONCURRENCY", DEFAULT_WORKER_SETTINGS.concurrency),
    lockDurationMs: positiveInteger(
      env,
      "WORKER_LOCK_DURATION_MS",
      DEFAULT_WORKER_SETTINGS.lockDurationMs,
    ),
    stalledIntervalMs: positiveInteger(
      env,
      "WORKER_STALLED_INTERVAL_MS",
      DEFAULT_WORKER_SETTINGS.stalledIntervalMs,
    ),
    shutdownMs: positiveInteger(env, "WORKER_SHUTDOWN_MS", DEFAULT_WORKER_SETTINGS.shutdownMs),
  };
}

/** Resolves after a signal once the workers have stopped. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseCommand(argv, io, { usage: USAGE, help: HELP });
  if (typeof parsed === "number") return parsed;
  let config: ServiceConfig;
  let settings: WorkerSettings;
  let metricsListener: MetricsListenerConfig | null;
  try {
    config = loadConfig(process.env);
    settings = workerSettings(process.env);
    metricsListener = metricsListenerFrom(process.env, "WORKER_METRICS_PORT");
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 2;
  }
  const redis = redisTargetOf(config);
  if (redis === null) {
    io.stderr(
      "error: receiptd worker needs REDIS_URL or REDIS_CLUSTER_NODES: it consumes the BullMQ queues in Redis\n",
    );
    return 2;
  }
  const log = jsonLog(config.logLevel, io.stdout);
  // Before the workers and the store are opened: they ask whether tracing is on.
  const tracing = await startTracing(config.tracing, "worker");
  await loadOrCreateServiceKey(config.dataDir);
  const identity = ServiceIdentity.open(config.dataDir);
  const metrics = await startWorkerMetrics({
    listener: metricsListener,
    redis,
    prefix: config.redisPrefix,
    queues: [ANCHORS_QUEUE, SETTLEMENTS_QUEUE],
    log,
  });
  const openedStore = await openDocumentStore(config, {
    log: { warn: (message) => log.warn({}, message), info: (message) => log.info({}, message) },
  });
  const store = metrics.observeStore(openedStore);
  const workers = startReceiptdWorkers({
    redis,
    prefix: config.redisPrefix,
    concurrency: settings.concurrency,
    lockDurationMs: settings.lockDurationMs,
    stalledIntervalMs: settings.stalledIntervalMs,
    store,
    signer: () => identity.signer(),
    log,
    onFailed: metrics.onFailed,
    ...(tracing === null ? {} : { telemetry: tracing.bullmqTelemetry }),
  });
  await Promise.all(workers.map((worker) => worker.ready()));
  // The one startup line: what an operator checks first (the URL itself is never logged).
  log.info(
    {
      mode: "distributed",
      queues: workers.map((worker) => worker.name),
      dataDir: config.dataDir,
      issuer: identity.signer().did,
      redisPrefix: config.redisPrefix,
      database: config.databaseUrl === null ? "off" : "on",
      concurrency: settings.concurrency,
      // What is really served: the scrape URL (host and port only), or off (issue 34, finding 7).
      metrics: metrics.url ?? "off",
      tracing: tracing === null ? "off" : "on",
      ed25519: ed25519Summary(),
    },
    "worker ready",
  );
  await stopSignal();
  log.info({}, "worker stopping");
  await stop(workers, settings.shutdownMs);
  await metrics.close();
  await openedStore.close();
  // Last: the spans of the jobs that just finished are exported before the process ends.
  await stopTracing().catch(() => {});
  log.info({}, "worker stopped");
  return 0;
}

/** The first SIGTERM or SIGINT; a second one ends the process at once. */
function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const onSignal = () => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      process.once("SIGTERM", () => process.exit(1));
      process.once("SIGINT", () => process.exit(1));
      resolve();
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}

async function stop(workers: QueueWorker[], timeoutMs: number): Promise<void> {
  await Promise.all(workers.map((worker) => worker.close(timeoutMs)));
}
