/**
 * The Fastify application (architecture.md): built here, listened on elsewhere
 * (`server.ts`), so tests drive the same app with `inject()` or a socket on port 0.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { ANCHORS_QUEUE, type AnchorsQueue } from "../../queues/anchors.js";
import { JobJournal, journalDirectory } from "../../queues/job-journal.js";
import {
  SETTLEMENTS_QUEUE,
  SettlementRecorder,
  type SettlementsQueue,
} from "../../queues/settlements.js";
import type { DigestCache } from "../cache/digest-cache.js";
import { loadCorpusSummary } from "../conformance/corpus.js";
import { loadOrCreateValidatorKey } from "../erc8004/validator-key.js";
import { ServiceMetrics } from "../metrics/metrics.js";
import { observeDocumentStore } from "../metrics/observe.js";
import { RedisOutages } from "../redis/outages.js";
import type { DocumentStore } from "../storage/document-store.js";
import { verifierCrypto } from "../verifier/crypto/provider.js";
import { createAccessServices } from "./access-services.js";
import { type Backends, openBackends, openQueues } from "./backends.js";
import type { ServiceConfig } from "./config.js";
import { CpuPool } from "./cpu-pool.js";
import { anchorRoutes } from "./endpoints/anchors/route.js";
import { verifyAnchorRoutes } from "./endpoints/anchors/verify-anchor-route.js";
import { conformanceRoutes } from "./endpoints/conformance/route.js";
import { crystalRoutes } from "./endpoints/crystals/route.js";
import { erc8004Routes } from "./endpoints/erc8004/route.js";
import { evaluationKeyRoutes } from "./endpoints/evaluation-keys/route.js";
import { mcpRoutes } from "./endpoints/mcp/route.js";
import { healthRoutes } from "./endpoints/meta/health.js";
import { infoRoutes } from "./endpoints/meta/info.js";
import { openApiCollector, openApiRoutes } from "./endpoints/meta/openapi.js";
import { locateWebRoot, pageRoutes } from "./endpoints/page/route.js";
import { revocationRoutes } from "./endpoints/revocations/route.js";
import { receiptRoutes } from "./endpoints/settlements/receipts-route.js";
import { paymentReceiptRoutes } from "./endpoints/settlements/route.js";
import { verifyRoutes } from "./endpoints/verify/route.js";
import { verifyReceiptRoutes } from "./endpoints/verify-receipt/route.js";
import {
  MemoryBudget,
  registerBodyAdmission,
  registerRawBodyParser,
} from "./http/body-admission.js";
import { ConnectionGuard, registerConnectionHooks } from "./http/connections.js";
import { loadOrCreateInternalToken } from "./internal-token.js";
import { registerAccessControl } from "./plugins/access.js";
import { registerCors } from "./plugins/cors.js";
import { handleFrameworkError, registerErrorHandling } from "./plugins/errors.js";
import { registerIdempotency } from "./plugins/idempotency.js";
import { bufferedStdout, logAborts, loggingOptions } from "./plugins/logging.js";
import { registerRequestMetrics } from "./plugins/metrics.js";
import { generateRequestId, registerRequestIdHeader } from "./plugins/request-id.js";
import { registerSchemaValidation } from "./plugins/schemas.js";
import { loadOrCreateServiceKey, ServiceIdentity } from "./service-key.js";
import type { WorkerContext } from "./tasks/worker-context.js";

declare module "fastify" {
  interface FastifyInstance {
    serviceConfig: ServiceConfig;
    /** The service's Ed25519 key (signs receipts and reports, named at `/info`); follows rotation. */
    serviceIdentity: ServiceIdentity;
    /** EIP-55 address of the secp256k1 validator key (signs ERC-8004 attestations). */
    validatorAddress: `0x${string}`;
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
  }
}

/** Longer than any request line Node accepts (16 KiB of headers, request line included). */
const MAX_PATH_PARAMETER_CHARACTERS = 16 * 1024;

export interface BuildOptions {
  /** The clock behind cache ages and expiry; defaults to `Date.now`. */
  clock?: () => number;
}

/**
 * Builds the app without listening. Creates the service key in `config.dataDir` on first
 * use and starts the worker threads; `app.close()` releases both.
 */
export async function buildApp(
  config: ServiceConfig,
  options: BuildOptions = {},
): Promise<FastifyInstance> {
  const clock = options.clock ?? Date.now;
  await loadOrCreateServiceKey(config.dataDir);
  const identity = ServiceIdentity.open(config.dataDir);
  const internalToken = await loadOrCreateInternalToken(config.internalTokenFile);
  const validator = await loadOrCreateValidatorKey(config.dataDir);
  const connections = new ConnectionGuard(config.http, config.trustProxy);
  const stdoutLog = config.logDestination === undefined ? bufferedStdout() : null;
  const app = Fastify({
    ...loggingOptions(config, stdoutLog ?? config.logDestination),
    serverFactory: connections.serverFactory,
    clientErrorHandler: connections.clientError,
    bodyLimit: config.limits.maxBodyBytes,
    genReqId: generateRequestId,
    frameworkErrors: handleFrameworkError,
    // While draining, requests already on open connections are still answered normally
    // (with `Connection: close`) rather than with Fastify's own 503 body.
    return503OnClosing: false,
    // Fastify routes path parameters of at most 100 characters and refuses longer ones with 400
    // before routing. Issuers are the one free-form parameter (a did:web can be long) and the
    // reference answers 404 for any of them, so every parameter is routed: Node's 16 KiB
    // header limit already bounds the request line.
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_CHARACTERS },
    // `request.ip` is the socket's peer unless TRUST_PROXY names the proxies in front.
    trustProxy: config.trustProxy,
  });

  app.decorate("serviceConfig", config);
  app.decorate("connections", connections);
  app.decorate("serviceIdentity", identity);
  app.decorate("validatorAddress", validator.address);
  app.decorate("clock", clock);
  const metrics = new ServiceMetrics();
  app.decorate("metrics", metrics);
  // Opened before the worker threads, so that a store that cannot be reached at startup
  // fails the start cleanly instead of leaving threads behind.
  // One per process: the shared Redis connection and the queues' report one outage once.
  const outages = new RedisOutages(app.log);
  const backends = await openBackends(config, { clock, log: app.log, outages });
  const documentStore = observeDocumentStore(backends.documentStore, (operation, kind) =>
    metrics.storeErrors.inc({ operation, kind }),
  );
  app.decorate("documentStore", documentStore);
  const space = documentStore.space;
  if (space !== undefined) metrics.observeStoreSpace(() => space.call(documentStore));
  app.decorate("digestCache", backends.digestCache);
  app.decorate("backends", backends);

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
    deadlineMs: config.cpuPool.taskDeadlineMs,
    taskModules: config.cpuPool.taskModules,
    workerData: workerContext,
  });
  app.decorate("cpuPool", pool);
  metrics.observeCpuPool(() => pool.stats());
  const queues = await openQueues(config, {
    documentStore,
    signer: () => identity.signer(),
    clock,
    outages,
  });
  const settlementsQueue = queues.settlements;
  const queueStats = await openQueueStats(config, app.log);
  if (queueStats !== null) metrics.observeQueues(queueStats);
  app.decorate("anchorsQueue", queues.anchors);
  app.decorate("settlementsQueue", settlementsQueue);
  // Settlement receipt jobs of the x402 path are durable before a paid answer is released:
  // in BullMQ, or in a file journal under DATA_DIR, replayed here after a crash.
  let access: ReturnType<typeof createAccessServices> | undefined;
  // What is open, in the order it is closed: at shutdown, or when a later step of the start
  // fails (a journal that cannot be read stops the start: its jobs must not be forgotten).
  const closeOpened = async () => {
    await pool.close();
    await settlements.close();
    await queues.close();
    await queueStats?.close();
    await access?.close();
    await backends.close();
  };
  const settlements = new SettlementRecorder({
    queue: settlementsQueue,
    journal: new JobJournal(journalDirectory(config.dataDir, SETTLEMENTS_QUEUE)),
    log: app.log,
  });
  try {
    await settlements.start();
  } catch (error) {
    await closeOpened();
    throw error;
  }
  access = createAccessServices(config, {
    documentStore,
    caps: backends.caps,
    nonces: backends.nonces,
    challenges: backends.challenges,
    internalToken,
    identity,
    clock,
    onSettled: (payment) => settlements.record(payment),
    onPayment: (outcome) => metrics.payments.inc({ outcome }),
    onSignatureCheck: () => metrics.signatureChecks.inc(),
    log: app.log,
  });
  try {
    // An intent journal that cannot be opened stops the start, as the receipt journal does.
    await access.start();
  } catch (error) {
    await closeOpened();
    throw error;
  }
  // onClose runs once in-flight requests have been answered, so no task is cut short.
  app.addHook("onClose", async () => {
    await closeOpened();
    stdoutLog?.close();
  });

  registerRequestIdHeader(app);
  logAborts(app);
  registerRequestMetrics(app);
  registerErrorHandling(app);
  registerConnectionHooks(app);
  registerRawBodyParser(app);
  await registerCors(app, config.cors);
  registerAccessControl(app, access);
  // After access control: it reads the principal, and its onSend runs after settlement's.
  registerIdempotency(app, backends.idempotency);
  registerBodyAdmission(app, new MemoryBudget(config.http.memoryBudgetBytes));
  registerSchemaValidation(app);

  await app.register(openApiCollector);
  app.register(openApiRoutes);
  app.register(healthRoutes);
  const corpus = config.corpusDir === null ? null : await loadCorpusSummary(config.corpusDir);
  app.register(infoRoutes, { corpus });
  app.register(revocationRoutes);
  app.register(mcpRoutes);
  app.register(verifyRoutes);
  app.register(verifyAnchorRoutes);
  app.register(anchorRoutes);
  app.register(verifyReceiptRoutes);
  app.register(conformanceRoutes);
  app.register(paymentReceiptRoutes, { internalToken });
  app.register(receiptRoutes);
  app.register(erc8004Routes);
  app.register(crystalRoutes);
  app.register(evaluationKeyRoutes);
  app.register(pageRoutes, { enabled: config.verificationPage, root: locateWebRoot() });
  return app;
}

/**
 * The BullMQ figures of `/metrics` in distributed mode (the queues this process feeds); none
 * when embedded, where jobs run in-process. BullMQ is loaded only by the mode that uses it.
 */
async function openQueueStats(config: ServiceConfig, log: FastifyBaseLogger) {
  if (config.redisUrl === null) return null;
  const { BullMqQueueStats } = await import("../../queues/queue-stats.js");
  return new BullMqQueueStats({
    redisUrl: config.redisUrl,
    prefix: config.redisPrefix,
    names: [ANCHORS_QUEUE, SETTLEMENTS_QUEUE],
    onError: (error) => log.debug(`metrics queue connection error: ${error.name}`),
  });
}
