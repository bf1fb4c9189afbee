/**
 * Runs the app on a socket until SIGTERM or SIGINT, then shuts down gracefully: stop
 * accepting connections, answer the requests already in flight, close the CPU pool.
 */
import { hostname } from "node:os";
import type { FastifyInstance } from "fastify";
import { startMetricsServer } from "../metrics/server.js";
import { startTracing, stopTracing } from "../tracing/tracing.js";
import { buildApp } from "./app.js";
import { openFileLimit, type ServiceConfig } from "./config.js";
import { ed25519Summary } from "./ed25519-summary.js";
import { removeServerFile, writeServerFile } from "./server-file.js";

const SHUTDOWN_SIGNALS = ["SIGTERM", "SIGINT"] as const;

export async function startServer(config: ServiceConfig): Promise<FastifyInstance> {
  // Before the app is built: its queues, stores and routes ask whether tracing is on.
  await startTracing(config.tracing, "web");
  const app = await buildApp(config);
  const shutDown = (signal: NodeJS.Signals) => {
    // Only the first signal drains; with our handlers gone, a second one ends the process
    // at once (Node's default), which is what an operator pressing Ctrl-C twice wants.
    for (const name of SHUTDOWN_SIGNALS) process.off(name, shutDown);
    app.log.info({ signal }, "shutting down: draining in-flight requests");
    const deadline = setTimeout(() => drainDeadlinePassed(app, config), config.shutdownDrainMs);
    deadline.unref();
    app.close().then(
      () => {
        clearTimeout(deadline);
        app.log.info("shut down");
      },
      (error: unknown) => {
        app.log.error({ err: error }, "shutdown failed");
        process.exitCode = 1;
      },
    );
  };
  // Node closes only the connections that are idle when the server closes; a keep-alive
  // connection whose request is still in flight would otherwise stay open after its answer
  // (for the keep-alive timeout) and hold the shutdown up. Answers given while draining
  // therefore close their connection.
  let draining = false;
  app.addHook("preClose", async () => {
    draining = true;
  });
  // Callback-style, as the other hooks that never wait: no promise per request (issue 33).
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (draining) reply.header("connection", "close");
    done(null, payload);
  });
  app.addHook("onClose", async () => {
    for (const name of SHUTDOWN_SIGNALS) process.off(name, shutDown);
    // Only when it still names this process: a later server on the same DATA_DIR owns it.
    await removeServerFile(config.dataDir).catch(() => {});
    // Last: the spans of the requests drained above are exported before the process ends.
    await stopTracing().catch(() => {});
  });
  try {
    await serveMetrics(app, config);
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    await app.close();
    throw error;
  }
  for (const name of SHUTDOWN_SIGNALS) process.on(name, shutDown);
  const url = listeningUrl(app, config);
  const summary = startupSummary(config, app.serviceIdentity.signer().did, url);
  // Keeps the framework's wording, which scripts and tests wait for; the framework's own line
  // is dropped (plugins/logging.ts) so that this is the one startup line.
  app.log.info(summary, `Server listening at ${url}`);
  await writeServerFile(config.dataDir, {
    url,
    pid: process.pid,
    hostname: hostname(),
    started_at: new Date().toISOString(),
    issuer: summary.issuer,
    mode: summary.mode,
  });
  warnAboutFileLimit(app, config);
  return app;
}

/** How long the process may take to exit once the drain deadline has stopped the work. */
const EXIT_GRACE_MS = 2000;

/**
 * A drain that outlives `SHUTDOWN_DRAIN_MS` (issue 22): running CPU tasks would otherwise hold
 * it without bound. Their threads are terminated (their requests answered 503 `overloaded`,
 * which a client may retry on another instance, on connections that then close), and the
 * process exits with 1 once the close completes, or after `EXIT_GRACE_MS` whatever still holds
 * it (a client still sending a body, say).
 */
function drainDeadlinePassed(app: FastifyInstance, config: ServiceConfig): void {
  app.log.warn({ drainMs: config.shutdownDrainMs }, "drain deadline passed: terminating CPU tasks");
  process.exitCode = 1;
  setTimeout(() => process.exit(1), EXIT_GRACE_MS).unref();
  void app.cpuPool.terminate();
}

/**
 * `/metrics` on its own listener (`METRICS_PORT`), never on the API port. Closed with the
 * app, once the last answer is sent, so figures can still be scraped while it drains.
 */
async function serveMetrics(app: FastifyInstance, config: ServiceConfig): Promise<void> {
  if (config.metrics === null) return;
  const server = await startMetricsServer(
    config.metrics,
    () => app.metrics.render(),
    (error) => app.log.error({ err: error }, "metrics scrape failed"),
  );
  app.addHook("onClose", async () => server.close());
  app.log.info({ url: `${server.url}/metrics` }, "metrics listening");
}

function listeningUrl(app: FastifyInstance, config: ServiceConfig): string {
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  return `http://${host}:${port}`;
}

export interface StartupSummary {
  mode: "embedded" | "distributed";
  address: string;
  dataDir: string;
  issuer: string;
  /** `on`, `off`, or `refused` when offered without a facilitator to settle them. */
  payments: "on" | "off" | "refused";
  corpus: "on" | "off";
  /** Whether `/metrics` has a listener of its own (`METRICS_PORT`). */
  metrics: "on" | "off";
  /** `cluster` when `REDIS_CLUSTER_NODES` selects a Redis Cluster. */
  redis: "on" | "off" | "cluster";
  database: "on" | "off";
  /** Whether anyone may obtain an evaluation key (`EVALUATION_KEYS`). */
  evaluationKeys: "on" | "off";
  /** `libsodium`, or `openssl: <why sodium-native is not in use>` (`ed25519Summary`). */
  ed25519: string;
}

/** What an operator needs to see at a glance that the process runs as intended. */
export function startupSummary(config: ServiceConfig, issuer: string, url: string): StartupSummary {
  const distributed =
    config.redisUrl !== null || config.redisClusterNodes !== null || config.databaseUrl !== null;
  const { settings, facilitatorUrl } = config.payments;
  return {
    mode: distributed ? "distributed" : "embedded",
    address: url,
    dataDir: config.dataDir,
    issuer,
    payments: settings === null ? "off" : facilitatorUrl === null ? "refused" : "on",
    corpus: config.corpusDir === null ? "off" : "on",
    metrics: config.metrics === null ? "off" : "on",
    redis: config.redisClusterNodes !== null ? "cluster" : config.redisUrl === null ? "off" : "on",
    database: config.databaseUrl === null ? "off" : "on",
    evaluationKeys: config.evaluationKeys === null ? "off" : "on",
    ed25519: ed25519Summary(),
  };
}

/** Files beyond the connections: stores, logs, worker threads, refusals being answered. */
const OTHER_FILES = 256;

/**
 * A connection accepted past the open-file limit is reset before anyone can answer it,
 * `/health` included, so a cap above the limit does not hold. Said once, at startup.
 */
function warnAboutFileLimit(app: FastifyInstance, config: ServiceConfig): void {
  const fileLimit = openFileLimit();
  const { maxConnections, healthReserveConnections } = config.http;
  if (fileLimit !== null && maxConnections + healthReserveConnections + OTHER_FILES > fileLimit) {
    app.log.warn(
      { maxConnections, healthReserveConnections, fileLimit },
      "MAX_CONNECTIONS + HEALTH_RESERVE_CONNECTIONS leave too few of the open-file limit: raise the limit (ulimit -n, LimitNOFILE) or lower the cap",
    );
  }
}
