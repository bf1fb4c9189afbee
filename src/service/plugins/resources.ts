/**
 * What the app holds — configuration, keys, stores, the CPU pool, queues, access services —
 * each decorated by one named plugin (names.ts) that declares what it needs, so an endpoint
 * or a request plugin can name the plugin behind a decoration in its `dependencies`.
 *
 * Everything opened here is closed by one sequence (`OpenedResources`), in one declared
 * order: when the app closes, or when a later step of the start fails (a journal that cannot
 * be read stops the start: its jobs must not be forgotten).
 */
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { ANCHORS_QUEUE, type AnchorsQueue } from "../../../queues/anchors.js";
import {
  SETTLEMENTS_QUEUE,
  SettlementRecorder,
  type SettlementsQueue,
} from "../../../queues/settlements.js";
import type { DigestCache } from "../../cache/digest-cache.js";
import { loadOrCreateValidatorKey } from "../../erc8004/validator-key.js";
import { ServiceMetrics } from "../../metrics/metrics.js";
import { observeDocumentStore } from "../../metrics/observe.js";
import type { RedisOutages } from "../../redis/outages.js";
import { redisTargetOf } from "../../redis/target.js";
import type { DocumentStore } from "../../storage/document-store.js";
import { JobJournal, journalDirectory } from "../../storage/job-journal.js";
import { verifierCrypto } from "../../verifier/crypto/provider.js";
import { createAccessServices } from "../access-services.js";
import { type Backends, openBackends, openQueues } from "../backends.js";
import type { ServiceConfig } from "../config.js";
import { CpuPool } from "../cpu-pool.js";
import type { ConnectionGuard } from "../http/connections.js";
import { type InternalToken, loadOrCreateInternalToken } from "../internal-token.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";
import { loadOrCreateServiceKey, ServiceIdentity } from "../service-key.js";
import type { WorkerContext } from "../tasks/worker-context.js";

declare module "fastify" {
  interface FastifyInstance {
    serviceConfig: ServiceConfig;
    /** The service's Ed25519 key (signs receipts and reports, named at `/info`); follows rotation. */
    serviceIdentity: ServiceIdentity;
    /** EIP-55 address of the secp256k1 validator key (signs ERC-8004 attestations). */
    validatorAddress: `0x${string}`;
    /** The deployment's shared secret: internal routes' credential, and the key behind derived keys. */
    internalToken: InternalToken;
    /** All CPU-bound work runs here; closed when the app closes. */
    cpuPool: CpuPool;
    /** Durable documents (anchors, revocation documents, …); files in `DATA_DIR` when embedded. */
    documentStore: DocumentStore;
    /** Stores hosted anchor proofs (`POST /anchors`); in-process when embedded. */
    anchorsQueue: AnchorsQueue;
    /** Signs and stores settlement receipts (`POST /payment-receipts`, x402); in-process. */
    settlementsQueue: SettlementsQueue;
    /** The opt-in digest cache of `POST /verify?cache=1`. */
    digestCache: DigestCache;
    /** The mode's stores and connections (embedded or distributed), for health and shutdown. */
    backends: Backends;
    /** Milliseconds since the epoch; injectable so tests can move time (cache expiry). */
    clock: () => number;
    /** The connection cap and timeouts of the HTTP server (issue 16). */
    connections: ConnectionGuard;
    /** This app's Prometheus registry and metrics (served by `server.ts` on `METRICS_PORT`). */
    metrics: ServiceMetrics;
    /** What the platform has opened, closed in one order (`OpenedResources`). */
    openedResources: OpenedResources;
  }
}

/**
 * The closing order. The CPU pool first, so no task is still writing; the settlement
 * recorder before the queues it feeds; the stores last, since everything above uses them.
 */
const CLOSE_ORDER = [
  "cpu-pool",
  "settlement-recorder",
  "queues",
  "queue-stats",
  "access-services",
  "backends",
] as const;

export type OpenedResource = (typeof CLOSE_ORDER)[number];

/** What is open, closed in `CLOSE_ORDER` whatever order it was opened in; each once. */
export class OpenedResources {
  readonly #closers = new Map<OpenedResource, () => Promise<void>>();

  /** Registered before the resource is started, so a start that fails still closes it. */
  add(resource: OpenedResource, close: () => Promise<void>): void {
    if (this.#closers.has(resource)) throw new Error(`${resource} is already open`);
    this.#closers.set(resource, close);
  }

  async close(): Promise<void> {
    for (const resource of CLOSE_ORDER) {
      const close = this.#closers.get(resource);
      if (close === undefined) continue;
      this.#closers.delete(resource);
      await close();
    }
  }
}

export interface ConfigOptions {
  config: ServiceConfig;
  clock: () => number;
}

/** `serviceConfig` and `clock`. */
export const configPlugin = fastifyPlugin<ConfigOptions>(
  async (app, { config, clock }) => {
    app.decorate("serviceConfig", config);
    app.decorate("clock", clock);
  },
  { name: PLATFORM.config, fastify: FASTIFY_VERSION },
);

export interface LifecycleOptions {
  opened: OpenedResources;
  /** Closed after everything else, so the shutdown's own log lines reach the output. */
  log: { close(): void } | null;
}

/** `openedResources`, closed once in-flight requests have been answered (no task cut short). */
export const lifecyclePlugin = fastifyPlugin<LifecycleOptions>(
  async (app, { opened, log }) => {
    app.decorate("openedResources", opened);
    app.addHook("onClose", async () => {
      await opened.close();
      log?.close();
    });
  },
  { name: PLATFORM.lifecycle, fastify: FASTIFY_VERSION },
);

/** `serviceIdentity`, `validatorAddress`, `internalToken`: created in `DATA_DIR` on first use. */
export const identityPlugin = fastifyPlugin(
  async (app: FastifyInstance) => {
    const config = app.serviceConfig;
    await loadOrCreateServiceKey(config.dataDir);
    app.decorate("serviceIdentity", ServiceIdentity.open(config.dataDir));
    app.decorate("internalToken", await loadOrCreateInternalToken(config.internalTokenFile));
    const validator = await loadOrCreateValidatorKey(config.dataDir);
    app.decorate("validatorAddress", validator.address);
  },
  {
    name: PLATFORM.identity,
    fastify: FASTIFY_VERSION,
    dependencies: [PLATFORM.config],
    decorators: { fastify: ["serviceConfig"] },
  },
);

/** `metrics`: this app's registry (one per app, so two apps in one test process do not mix). */
export const metricsPlugin = fastifyPlugin(
  async (app: FastifyInstance) => {
    app.decorate("metrics", new ServiceMetrics());
  },
  { name: PLATFORM.metrics, fastify: FASTIFY_VERSION },
);

/** `connections`: the guard is made before Fastify, whose server it creates. */
export const connectionsPlugin = fastifyPlugin<{ guard: ConnectionGuard }>(
  async (app, { guard }) => {
    app.decorate("connections", guard);
  },
  { name: PLATFORM.connections, fastify: FASTIFY_VERSION },
);

/** The process's Redis outage log, shared by the stores' and the queues' connections. */
export interface OutagesOptions {
  outages: RedisOutages;
}

/**
 * `backends`, `documentStore` (observed for `/metrics`), `digestCache`. Opened before the
 * worker threads, so that a store that cannot be reached at startup fails the start cleanly
 * instead of leaving threads behind.
 */
export const backendsPlugin = fastifyPlugin<OutagesOptions>(
  async (app, { outages }) => {
    const { serviceConfig: config, clock, metrics } = app;
    const backends = await openBackends(config, { clock, log: app.log, outages });
    app.openedResources.add("backends", () => backends.close());
    const documentStore = observeDocumentStore(backends.documentStore, (operation, kind) =>
      metrics.storeErrors.inc({ operation, kind }),
    );
    const space = documentStore.space;
    if (space !== undefined) metrics.observeStoreSpace(() => space.call(documentStore));
    app.decorate("backends", backends);
    app.decorate("documentStore", documentStore);
    app.decorate("digestCache", backends.digestCache);
  },
  {
    name: PLATFORM.backends,
    fastify: FASTIFY_VERSION,
    dependencies: [PLATFORM.config, PLATFORM.lifecycle, PLATFORM.metrics],
    decorators: { fastify: ["serviceConfig", "clock", "metrics", "openedResources"] },
  },
);

/** `cpuPool`: the worker threads every CPU-bound task runs on. */
export const cpuPoolPlugin = fastifyPlugin(
  async (app: FastifyInstance) => {
    const config = app.serviceConfig;
    const workerContext: WorkerContext = {
      dataDir: config.dataDir,
      corpusDir: config.corpusDir,
      maxBatch: config.limits.maxBatch,
      maxResultBytes: config.limits.maxResultBytes,
      ed25519: verifierCrypto().id,
    };
    const pool = new CpuPool({
      threads: config.cpuPool.threads,
      maxQueue: config.cpuPool.maxQueue,
      maxQueuePerPrincipal: config.cpuPool.maxQueuePerPrincipal,
      deadlineMs: config.cpuPool.taskDeadlineMs,
      taskModules: config.cpuPool.taskModules,
      workerData: workerContext,
    });
    app.openedResources.add("cpu-pool", () => pool.close());
    app.decorate("cpuPool", pool);
    app.metrics.observeCpuPool(() => pool.stats());
  },
  {
    name: PLATFORM.cpuPool,
    fastify: FASTIFY_VERSION,
    // After the stores: see backendsPlugin.
    dependencies: [PLATFORM.config, PLATFORM.lifecycle, PLATFORM.metrics, PLATFORM.backends],
    decorators: { fastify: ["serviceConfig", "metrics", "openedResources"] },
  },
);

/** `anchorsQueue`, `settlementsQueue`, and their BullMQ figures for `/metrics` when distributed. */
export const queuesPlugin = fastifyPlugin<OutagesOptions>(
  async (app, { outages }) => {
    const { serviceConfig: config, serviceIdentity: identity, clock } = app;
    const queues = await openQueues(config, {
      documentStore: app.documentStore,
      signer: () => identity.signer(),
      clock,
      outages,
    });
    app.openedResources.add("queues", () => queues.close());
    app.decorate("anchorsQueue", queues.anchors);
    app.decorate("settlementsQueue", queues.settlements);
    const queueStats = await openQueueStats(config, app.log);
    if (queueStats === null) return;
    app.openedResources.add("queue-stats", () => queueStats.close());
    app.metrics.observeQueues(queueStats);
  },
  {
    name: PLATFORM.queues,
    fastify: FASTIFY_VERSION,
    dependencies: [
      PLATFORM.config,
      PLATFORM.lifecycle,
      PLATFORM.identity,
      PLATFORM.metrics,
      PLATFORM.backends,
    ],
    decorators: {
      fastify: ["serviceConfig", "serviceIdentity", "clock", "documentStore", "openedResources"],
    },
  },
);

/**
 * The BullMQ figures of `/metrics` in distributed mode (the queues this process feeds); none
 * when embedded, where jobs run in-process. BullMQ is loaded only by the mode that uses it.
 */
async function openQueueStats(config: ServiceConfig, log: FastifyBaseLogger) {
  const redis = redisTargetOf(config);
  if (redis === null) return null;
  const { BullMqQueueStats } = await import("../../../queues/queue-stats.js");
  return new BullMqQueueStats({
    redis,
    prefix: config.redisPrefix,
    names: [ANCHORS_QUEUE, SETTLEMENTS_QUEUE],
    onError: (error) => log.debug(`metrics queue connection error: ${error.name}`),
  });
}

/**
 * `accessServices` (keys, caps, x402, evaluation keys, audit), for the access plugin. Settlement
 * receipt jobs of the x402 path are durable before a paid answer is released: in BullMQ, or in
 * a file journal under DATA_DIR, replayed here after a crash; and settlements a crash
 * interrupted are reconciled from the intent journal. Either journal that cannot be read stops
 * the start.
 */
export const accessServicesPlugin = fastifyPlugin(
  async (app: FastifyInstance) => {
    const { serviceConfig: config, metrics, clock } = app;
    const settlements = new SettlementRecorder({
      queue: app.settlementsQueue,
      journal: new JobJournal(journalDirectory(config.dataDir, SETTLEMENTS_QUEUE)),
      log: app.log,
    });
    app.openedResources.add("settlement-recorder", () => settlements.close());
    await settlements.start();
    const access = createAccessServices(config, {
      documentStore: app.documentStore,
      caps: app.backends.caps,
      nonces: app.backends.nonces,
      signatureChecks: app.backends.signatureChecks,
      challenges: app.backends.challenges,
      internalToken: app.internalToken,
      identity: app.serviceIdentity,
      clock,
      onSettled: (payment) => settlements.record(payment),
      onPayment: (outcome) => metrics.payments.inc({ outcome }),
      onSignatureCheck: () => metrics.signatureChecks.inc(),
      log: app.log,
    });
    app.openedResources.add("access-services", () => access.close());
    metrics.observeAuditBytes(() => access.audit.bytes);
    await access.start();
    app.decorate("accessServices", access);
  },
  {
    name: PLATFORM.accessServices,
    fastify: FASTIFY_VERSION,
    dependencies: [
      PLATFORM.config,
      PLATFORM.lifecycle,
      PLATFORM.identity,
      PLATFORM.metrics,
      PLATFORM.backends,
      PLATFORM.queues,
    ],
    decorators: {
      fastify: [
        "serviceConfig",
        "clock",
        "metrics",
        "serviceIdentity",
        "internalToken",
        "documentStore",
        "backends",
        "settlementsQueue",
        "openedResources",
      ],
    },
  },
);
