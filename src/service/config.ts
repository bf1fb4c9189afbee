/**
 * The service's configuration (service.md §12–§13): read once from the environment, typed,
 * validated, then passed down explicitly. Nothing below this module reads `process.env`.
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { auditDirFrom } from "../access/audit.js";
import type { Env } from "../io/env.js";
import type { MetricsListenerConfig } from "../metrics/server.js";
import { PaymentConfigError } from "../payments/errors.js";
import { type PaymentSettings, paymentSettings } from "../payments/requirements.js";
import { parseClusterNodes, type RedisNode } from "../redis/target.js";
import { TRACE_PROTOCOLS, type TraceProtocol, type TracingConfig } from "../tracing/tracing.js";
import { codedErrorClass } from "../verifier/coded-error.js";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The configurable limits of service.md §12. Receipts per bundle (10,000) and bundle nesting
 * depth (64) are not here: they are verdict rules of the verifier (verifier.md §4), fixed so
 * that verdicts stay identical to the reference's.
 */
export interface ServiceLimits {
  /** Every JSON endpoint except `POST /crystals`. */
  maxBodyBytes: number;
  maxCrystalBodyBytes: number;
  maxCrystalCiphertextBytes: number;
  /**
   * `ANONYMOUS_BODY_BYTES`: the body a request without a key, pass or payment may send
   * (MCP discovery, evaluation-key issuance); the route's own limit when that is lower.
   */
  maxAnonymousBodyBytes: number;
  /** `CRYSTAL_UPLOADS_PER_KEY`: `POST /crystals` bodies one principal may send at once. */
  maxCrystalUploadsPerKey: number;
  /** Stored crystal bytes (envelopes and summaries) one tenant may hold (`CRYSTAL_TENANT_QUOTA_BYTES`). */
  crystalTenantQuotaBytes: number;
  /** Stored crystal bytes one principal may hold across its tenants (`CRYSTAL_KEY_QUOTA_BYTES`). */
  crystalPrincipalQuotaBytes: number;
  /**
   * Stored bytes one principal may have `POST /anchors` write (`ANCHOR_KEY_QUOTA_BYTES`).
   * Anchors have no tenant, so the principal is the only owner a quota can name.
   */
  anchorPrincipalQuotaBytes: number;
  /** The same for a self-served evaluation key (`ANCHOR_EVALUATION_KEY_QUOTA_BYTES`). */
  anchorEvaluationQuotaBytes: number;
  /**
   * `CRYSTAL_TTL_DAYS`: whole days a crystal is kept after it was first stored before
   * `receiptd crystals expire` removes it (0: never); see src/crystals/expiry.ts.
   */
  crystalTtlDays: number;
  /**
   * Stored notarization bytes one API key or x402 payer may hold (`NOTARIZATION_KEY_QUOTA_BYTES`);
   * notarizations have no tenant (like anchors), so the principal is the owner a quota names.
   */
  notarizationPrincipalQuotaBytes: number;
  /** The same for one evaluation key (`NOTARIZATION_EVALUATION_KEY_QUOTA_BYTES`): smaller. */
  notarizationEvaluationKeyQuotaBytes: number;
  /**
   * Stored notarization bytes all evaluation keys together may hold
   * (`NOTARIZATION_EVALUATION_QUOTA_BYTES`): the free tier is one owner, whatever the number
   * of keys it is issued as.
   */
  notarizationEvaluationQuotaBytes: number;
  /**
   * `NOTARIZATION_TTL_DAYS`: whole days a notarization is kept after it was stored before
   * `receiptd notarization expire` removes it (0: never); see src/notarization/expiry.ts.
   */
  notarizationTtlDays: number;
  /** Bundles in one `POST /verify` batch. */
  maxBatch: number;
  /**
   * Bytes of errors and reasons the verdicts of one request may hold (`POST /verify`, one
   * `POST /mcp` body): above it the request is refused with `400 result_too_large`.
   */
  maxResultBytes: number;
  digestCacheTtlSeconds: number;
  digestCacheMaxEntries: number;
  anonymousDailyCap: number;
  /**
   * `ANON_ADDRESS_DAILY_CAP`: the share of the anonymous cap one client address (IPv6: one
   * /64) may spend per day; the anonymous cap stays the backstop for all of them together.
   */
  anonymousAddressDailyCap: number;
  /**
   * `ANON_NETWORK_DAILY_CAP`: the share of the anonymous cap one network (IPv4 /24, IPv6 /48)
   * may spend per day, all its addresses together (src/access/anonymous-cap.ts).
   */
  anonymousNetworkDailyCap: number;
  /**
   * `ANON_NEW_CLIENT_RESERVE_PERCENT`: the top of the anonymous cap, in percent of it, that
   * only an address's first calls of the day may take, so a new client still gets an
   * evaluation-key challenge after returning clients have spent the rest. A percentage, so the
   * reserve follows `ANON_DAILY_CAP` wherever an operator sets it.
   */
  anonymousNewClientReservePercent: number;
  keyDailyCap: number;
  x402PayerDailyCap: number;
  /**
   * `X402_SIGNATURE_CHECKS_PER_ADDRESS`: payment signatures one client address (IPv6: /64)
   * may make this process recover per second (bursts of twice as many); beyond it `429
   * payment_rate_limited` before any hashing.
   */
  x402SignatureChecksPerAddress: number;
  /** `X402_SIGNATURE_CHECKS_PER_SECOND`: the same for the whole process; beyond it 503. */
  x402SignatureChecksPerSecond: number;
  leaseSeconds: number;
  dayPassSeconds: number;
}

export interface CpuPoolConfig {
  /** Worker threads; the pool never grows or shrinks (min = max). */
  threads: number;
  /** Tasks allowed to wait for a thread; beyond it requests get 503 `overloaded`. */
  maxQueue: number;
  /**
   * `CPU_MAX_QUEUE_PER_PRINCIPAL`: tasks one principal may have waiting (issue 32); by default
   * `maxQueue`, the push-out of the longest queue sharing it (fair-queue.ts).
   */
  maxQueuePerPrincipal: number;
  /**
   * `CPU_TASK_DEADLINE_MS`: the longest one task may take, from the moment it is handed to
   * the pool (waiting for a thread included); then it is abandoned, its thread terminated
   * and replaced, and the request answered 503 `work_limit_exceeded` (issue 22).
   */
  taskDeadlineMs: number;
  /**
   * Worker modules that replace an endpoint's own (`endpoints/<name>/worker.ts`), keyed by the
   * endpoint folder's name (`verify`): tests
   * substitute instrumented ones. Empty in every real configuration.
   */
  taskModules: Readonly<Record<string, string>>;
}

/**
 * How long a connection may make the service wait, and how many it may hold (issue 16). The
 * receive side is bounded by `headersTimeoutMs` and `requestTimeoutMs`; `idleTimeoutMs` closes
 * a socket on which nothing moved while the client was the one to act (a body that stalls, an
 * answer the client does not read); `keepAliveTimeoutMs` bounds an idle keep-alive connection.
 */
export interface HttpServerConfig {
  /** `HEADERS_TIMEOUT_MS`: the request line and headers must arrive within it (≤ the next). */
  headersTimeoutMs: number;
  /** `REQUEST_TIMEOUT_MS`: the whole request, body included, must arrive within it. */
  requestTimeoutMs: number;
  /** `IDLE_TIMEOUT_MS`: no byte received or sent for this long while waiting on the client. */
  idleTimeoutMs: number;
  /** `KEEP_ALIVE_TIMEOUT_MS`: an idle keep-alive connection is closed after it. */
  keepAliveTimeoutMs: number;
  /** `MAX_CONNECTIONS`: connections served normally; beyond them new ones get 503. */
  maxConnections: number;
  /**
   * `HEALTH_RESERVE_CONNECTIONS`: connections beyond `maxConnections` admitted for one
   * `GET /health` each, so a load balancer can still see the instance while it is full.
   */
  healthReserveConnections: number;
  /**
   * `MAX_CONNECTIONS_PER_ADDRESS`: connections one client address (IPv4 address, IPv6 /64)
   * may hold; addresses named in `TRUST_PROXY` have no share of their own.
   */
  maxConnectionsPerAddress: number;
  /**
   * `MIN_READ_BYTES_PER_SECOND`: an answer the client reads slower than this, measured over
   * each idle-timeout period, has its connection closed.
   */
  minReadBytesPerSecond: number;
  /**
   * `MEMORY_BUDGET_BYTES`: request bodies being received (counted at their declared length)
   * and answers not yet written, across the process; past it, new requests get 503.
   */
  memoryBudgetBytes: number;
  /**
   * `MEMORY_SHARE_PERCENT`: the part of the memory budget one principal's requests may hold
   * (an API key, an evaluation key, an x402 payer; an anonymous address), issue 32.
   */
  memorySharePercent: number;
}

/** The bound of each distributed queue (queues/queue-budget.ts). */
export interface QueueBudgetConfig {
  /**
   * `QUEUE_BUDGET_BYTES`: payload bytes a queue may hold waiting or running, across the
   * deployment; past it, writes get `503 queue_full` before they are enqueued.
   */
  budgetBytes: number;
  /** `QUEUE_SHARE_PERCENT`: the part of the budget one principal's jobs may hold (1–100). */
  sharePercent: number;
}

export const DEFAULT_QUEUE_BUDGET: QueueBudgetConfig = {
  budgetBytes: 64 * 1024 * 1024,
  sharePercent: 25,
};

function queueBudgetFrom(env: Env): QueueBudgetConfig {
  return {
    budgetBytes: integerFrom(
      env,
      "QUEUE_BUDGET_BYTES",
      DEFAULT_QUEUE_BUDGET.budgetBytes,
      1024 * 1024,
      Number.MAX_SAFE_INTEGER,
    ),
    sharePercent: integerFrom(
      env,
      "QUEUE_SHARE_PERCENT",
      DEFAULT_QUEUE_BUDGET.sharePercent,
      1,
      100,
    ),
  };
}

/** Where log lines go instead of stdout (tests capture them). */
export interface LogDestination {
  write(line: string): void;
}

/**
 * x402 (service.md §9, §13). Payments are on when `X402_PAY_TO` is set; without
 * `FACILITATOR_URL` they are offered but refused (nothing can be settled).
 */
export interface PaymentsConfig {
  /** Payment settings from the environment, or null when payments are off. */
  settings: PaymentSettings | null;
  facilitatorUrl: string | null;
  /**
   * The service's public origin (`PUBLIC_BASE_URL`), which names resources in x402
   * challenges; by default `http://HOST:PORT`. Never taken from a request's Host header.
   */
  publicBaseUrl: string;
}

/**
 * Self-served evaluation keys (`POST /keys/evaluation`, docs/evaluation-keys.md); the
 * configuration holds null when `EVALUATION_KEYS=off`.
 */
export interface EvaluationKeysConfig {
  /** `EVALUATION_KEY_DAILY_CAP`: calls per UTC day of one evaluation key. */
  keyDailyCap: number;
  /** `EVALUATION_KEY_TTL_HOURS`: how long a key works from its issuance. */
  ttlHours: number;
  /** `EVALUATION_KEYS_PER_ADDRESS`: keys per client address (IPv6: per /64) per UTC day. */
  perAddressDaily: number;
  /**
   * `EVALUATION_KEYS_PER_NETWORK`: keys per network (IPv4 /24, IPv6 /48) per UTC day, so that
   * the addresses of one site or block share a limit as well as each its own.
   */
  perNetworkDaily: number;
  /** `EVALUATION_KEYS_PER_DAY`: keys issued per UTC day, all clients together. */
  perDay: number;
  /** `EVALUATION_POW_BITS`: leading zero bits the proof of work must reach (the day's first). */
  powBits: number;
  /**
   * `EVALUATION_POW_RAMP_BITS`: bits added to `powBits` as the day's issuance fills, in equal
   * steps: `powBits + floor(rampBits × issued / perDay)`, at most 32.
   */
  powRampBits: number;
}

export const DEFAULT_EVALUATION_KEYS: Readonly<EvaluationKeysConfig> = {
  keyDailyCap: 100,
  ttlHours: 24,
  perAddressDaily: 2,
  perNetworkDaily: 8,
  perDay: 200,
  powBits: 16,
  powRampBits: 8,
};

/**
 * `TRUST_PROXY`: whose `X-Forwarded-For` names the client (Fastify's `trustProxy`). `false`:
 * nobody's, the client is the socket's peer; else the addresses or CIDR ranges (or `loopback`,
 * `linklocal`, `uniquelocal`) of the proxies in front of the service: the client is the
 * nearest address in `X-Forwarded-For` that is not one of them. (A bare hop count is not
 * offered: it cannot tell a proxy from a client that sends the header itself.)
 */
export type TrustProxy = false | string[];

export interface StorageConfig {
  /**
   * `STORE_MIN_FREE_BYTES`: free space under `DATA_DIR/store` below which `/health` and the
   * metrics report `low_space` (embedded mode).
   */
  minFreeBytes: number;
}

export interface ServiceConfig {
  host: string;
  port: number;
  /** Absolute path of the embedded document store and key files. */
  dataDir: string;
  logLevel: LogLevel;
  logDestination?: LogDestination;
  /** Absolute path of the conformance corpus, or null when none is deployed. */
  corpusDir: string | null;
  /** Directory of the per-day audit files (`AUDIT_DIR`, default `DATA_DIR/audit`). */
  auditDir: string;
  /**
   * `AUDIT_RETENTION_DAYS`: audit days older than this many days are removed (0: never);
   * closed days are compressed whatever it is (issue 37, src/access/audit-files.ts).
   */
  auditRetentionDays: number;
  /** The token `POST /payment-receipts` requires (`INTERNAL_TOKEN_FILE`, created 0600). */
  internalTokenFile: string;
  payments: PaymentsConfig;
  /** `REDIS_URL`: caps, digest cache, nonces and queues in Redis (distributed mode), or null. */
  redisUrl: string | null;
  /**
   * `REDIS_CLUSTER_NODES`: seeds of a Redis Cluster (issue 36), or null. Set, it selects the
   * cluster client, and distributed mode even without `REDIS_URL` (whose user, password and
   * TLS then apply to every node). `redisTargetOf` (src/redis/target.ts) reads the two.
   */
  redisClusterNodes: RedisNode[] | null;
  /**
   * Prefix of every Redis key and BullMQ queue (`REDIS_PREFIX`, default `receiptd`), so several
   * deployments (or test runs) can share one Redis.
   */
  redisPrefix: string;
  /** Each queue's byte budget in Redis and a principal's share of it (issue 34, distributed mode). */
  queueBudget: QueueBudgetConfig;
  /** `DATABASE_URL`: the PostgreSQL document store, or null (files in `DATA_DIR`). */
  databaseUrl: string | null;
  /** `DATABASE_SCHEMA`: the schema holding the store's tables (default `receiptd`). */
  databaseSchema: string;
  /** Disk space and storage quotas (issue 24). */
  storage: StorageConfig;
  /**
   * `MCP_ALLOWED_ORIGINS`: browser origins besides `PUBLIC_BASE_URL`'s that may call
   * `POST /mcp` (normalised `scheme://host[:port]`).
   */
  mcpAllowedOrigins: string[];
  /** Browser access to the HTTP API (`CORS_ORIGINS`, issue 14). */
  cors: CorsConfig;
  /**
   * The server `/openapi.json` names: `PUBLIC_BASE_URL` when it is set, else `/` (relative:
   * the origin the document was fetched from).
   */
  openApiServerUrl: string;
  limits: ServiceLimits;
  /** Self-served evaluation keys, or null when they are off (`EVALUATION_KEYS=off`). */
  evaluationKeys: EvaluationKeysConfig | null;
  /**
   * `VERIFICATION_PAGE`: whether `GET /` serves the verification page (docs/web-page.md);
   * off, the page and its assets answer `404 not_found`.
   */
  verificationPage: boolean;
  /** Which proxies' `X-Forwarded-For` is believed for the client's address. */
  trustProxy: TrustProxy;
  cpuPool: CpuPoolConfig;
  http: HttpServerConfig;
  /**
   * `SHUTDOWN_DRAIN_MS`: how long a SIGTERM drain waits for requests in flight before their
   * CPU tasks are terminated and the process exits (issue 22).
   */
  shutdownDrainMs: number;
  /** The `/metrics` listener (`METRICS_PORT`, `METRICS_HOST`, `METRICS_TOKEN`), or null: off. */
  metrics: MetricsListenerConfig | null;
  /** OTLP/HTTP trace export (issue 36), or null: off, and nothing of OpenTelemetry loaded. */
  tracing: TracingConfig | null;
}

// ---- CORS and the OpenAPI server (issue 14) ------------------------------------------------

/**
 * `CORS_ORIGINS`: the browser origins that may call the API, comma-separated
 * (`https://app.example,http://localhost:5173`), or `*` for any origin. Empty (the default)
 * leaves CORS off: browsers get no CORS headers, as before. No credentials mode is ever
 * offered (the API takes keys in headers, never cookies), which is what makes `*` safe.
 * `CORS_MAX_AGE_SECONDS` (default 600): how long a browser may cache a preflight.
 */
export interface CorsConfig {
  origins: string[] | "*";
  maxAgeSeconds: number;
}

function corsFrom(env: Env): CorsConfig {
  const maxAgeSeconds = integerFrom(
    env,
    "CORS_MAX_AGE_SECONDS",
    DEFAULT_SETTINGS.corsMaxAgeSeconds,
    0,
    86_400,
  );
  const text = env.CORS_ORIGINS?.trim() ?? "";
  if (text === "*") return { origins: "*", maxAgeSeconds };
  if (text.split(",").some((entry) => entry.trim() === "*")) {
    throw new ConfigError("CORS_ORIGINS is either '*' alone or a list of origins");
  }
  return { origins: originsFrom(env, "CORS_ORIGINS"), maxAgeSeconds };
}

// ---------------------------------------------------------------------------------------------

export interface ConfigOverrides
  extends Partial<Omit<ServiceConfig, "limits" | "cpuPool" | "http">> {
  limits?: Partial<ServiceLimits>;
  cpuPool?: Partial<CpuPoolConfig>;
  http?: Partial<HttpServerConfig>;
}

export type ConfigErrorCode = "config_invalid";
export class ConfigError extends codedErrorClass<ConfigErrorCode>("config_invalid") {
  override readonly name = "ConfigError";
}

const MIB = 1024 * 1024;

export const DEFAULT_LIMITS: Readonly<ServiceLimits> = {
  maxBodyBytes: MIB,
  maxCrystalBodyBytes: 4 * MIB,
  maxCrystalCiphertextBytes: 2 * MIB,
  // MCP discovery messages (initialize, tools/list) are a few hundred bytes.
  maxAnonymousBodyBytes: 16 * 1024,
  maxCrystalUploadsPerKey: 4,
  // About 90 crystals of the largest size per tenant, 360 per key: one key can no longer fill
  // a disk in a day (issue 24: 280 MB a day each, 56 GB for 200 evaluation keys).
  crystalTenantQuotaBytes: 256 * MIB,
  crystalPrincipalQuotaBytes: 1024 * MIB,
  // A proof is a few hundred bytes to a few KiB: tens of thousands of anchors per key, while
  // 200 evaluation keys together hold at most 12.5 GiB.
  anchorPrincipalQuotaBytes: 64 * MIB,
  // A free key tries the service: hundreds of pending proofs, not a lifetime archive. At the
  // default issuance (200 a day) evaluation keys add at most 200 MiB of anchors a day.
  anchorEvaluationQuotaBytes: MIB,
  // A quarter: long enough for an agent's working memory across a project, short enough that
  // an abandoned tenant's bytes come back to the disk and to its owner's quota.
  crystalTtlDays: 90,
  // A notarization is about 1 KiB, at most 10.8 KiB: 64 MiB is thousands of the largest and
  // tens of thousands of ordinary ones per key. An evaluation key (100 calls, 24 hours) gets
  // 1 MiB, and the 200 evaluation keys of a day share 256 MiB (issue 32: 216 MB a day).
  notarizationPrincipalQuotaBytes: 64 * MIB,
  notarizationEvaluationKeyQuotaBytes: MIB,
  notarizationEvaluationQuotaBytes: 256 * MIB,
  // A statement is evidence of what was asserted when: a year covers an audit of the year's
  // work; operators who must keep them longer set 0 (never).
  notarizationTtlDays: 365,
  maxBatch: 50,
  // Room for the reference's answer to any single bundle of 10,000 `{}` receipts (3.7 MB).
  maxResultBytes: 4 * MIB,
  digestCacheTtlSeconds: 900,
  digestCacheMaxEntries: 256,
  anonymousDailyCap: 2000,
  // A tenth of the pool: one address cannot spend it, ten distinct ones would have to.
  anonymousAddressDailyCap: 200,
  // A quarter of the pool: two and a half addresses' shares. A campus or a large NAT behind
  // one /24 gets 500 keyless reads a day; a /24 of attacking addresses no more.
  anonymousNetworkDailyCap: 500,
  // 5% of the pool (100 of 2,000): 33 new clients' challenge, key and one retry after the
  // rest is spent.
  anonymousNewClientReservePercent: 5,
  keyDailyCap: 1000,
  x402PayerDailyCap: 1000,
  // About 2 ms of main-thread CPU each: one client at most 2% of the thread, all of them 20%.
  x402SignatureChecksPerAddress: 10,
  x402SignatureChecksPerSecond: 100,
  leaseSeconds: 300,
  dayPassSeconds: 86_400,
};

/**
 * Queued tasks allowed per thread by default. A queued single-bundle task is about a
 * millisecond of work, so a full queue is tens of milliseconds of backlog per thread; it
 * also bounds the request bodies held in memory while they wait (1 MiB each at most).
 */
const QUEUED_TASKS_PER_THREAD = 32;

/**
 * `CPU_TASK_DEADLINE_MS` by default: many times what the largest legal request costs (a 1 MiB
 * batch of 50 bundles takes well under a second of one thread), far below what a stuck or
 * hostile task would otherwise hold a thread for.
 */
export const DEFAULT_TASK_DEADLINE_MS = 15_000;

/** Below the 30 s an orchestrator usually waits after SIGTERM before it sends SIGKILL. */
export const DEFAULT_SHUTDOWN_DRAIN_MS = 25_000;

/**
 * The plain defaults read below, named once so `config-reference.ts` (help text,
 * docs/configuration.md, .env.example) states the values this module applies.
 */
export const DEFAULT_SETTINGS = {
  host: "127.0.0.1",
  port: 8080,
  logLevel: "info",
  redisPrefix: "receiptd",
  databaseSchema: "receiptd",
  metricsHost: "127.0.0.1",
  corsMaxAgeSeconds: 600,
  // Billing meters a month after it ends, from its audit files: on the last day of a 31-day
  // month the first day of the month before is 61 days back. 62 keeps the previous month
  // whole on every day of the next, with a day to spare; a month of disputes or audits
  // more is the operator's choice (93), at a third more disk.
  auditRetentionDays: 62,
  /** USD prices of x402 calls, lease and day pass. */
  x402Prices: { call: "0.01", lease: "0.01", day: "0.50" },
} as const;

/** `receiptd worker`'s settings (src/cli/worker.ts reads them). */
export const DEFAULT_WORKER_SETTINGS = {
  concurrency: 8,
  lockDurationMs: 30_000,
  stalledIntervalMs: 30_000,
  shutdownMs: 25_000,
} as const;

export const DEFAULT_HTTP_TIMEOUTS = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  idleTimeoutMs: 30_000,
  // Above the 60 s idle timeout of common load balancers, which must give up on a
  // connection before the server does, or a request sent as it closes is lost.
  keepAliveTimeoutMs: 72_000,
} as const;

const DEFAULT_MAX_CONNECTIONS = 4096;
const DEFAULT_HEALTH_RESERVE = 16;

export const DEFAULT_CONNECTION_SHARES = {
  // 64 kbit/s: slower than any client an API serves, fast enough that a trickle reader
  // lets go of an 8 MB answer within minutes instead of holding it for hours.
  minReadBytesPerSecond: 8 * 1024,
  // 256 concurrent 1 MiB bodies: far above what the CPU queue lets wait (32 per thread).
  memoryBudgetBytes: 256 * MIB,
  // A quarter: 64 bodies of 1 MiB at the default budget, far more than one honest client
  // sends at once, and four principals' worth before the budget itself is the limit.
  memorySharePercent: 25,
} as const;

/** One address's share of the connections unless `MAX_CONNECTIONS_PER_ADDRESS` says otherwise. */
export function defaultConnectionsPerAddress(maxConnections: number): number {
  return Math.max(1, Math.floor(maxConnections / 4));
}

/**
 * The process's open-file limit (Node raises the soft limit to the hard one at startup), or
 * null where `/proc` cannot tell it.
 */
export function openFileLimit(): number | null {
  try {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
    if (match === null || match[1] === undefined) return null;
    return match[1] === "unlimited" ? null : Number(match[1]);
  } catch {
    return null;
  }
}

/**
 * Connections served normally unless `MAX_CONNECTIONS` says otherwise: 4,096, or fewer when
 * the open-file limit would be reached first. A socket accepted past that limit is reset by
 * the kernel-level accept loop before anyone can answer it, `/health` included, so the cap
 * leaves a quarter of the limit (at most 1,024 files) to stores, logs, worker threads and
 * the refusals themselves.
 */
export function defaultMaxConnections(fileLimit: number | null, reserve: number): number {
  if (fileLimit === null) return DEFAULT_MAX_CONNECTIONS;
  const headroom = Math.min(1024, Math.floor(fileLimit / 4));
  return Math.max(1, Math.min(DEFAULT_MAX_CONNECTIONS, fileLimit - headroom - reserve));
}

function integerFrom(env: Env, name: string, fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  if (!/^\d+$/.test(text)) throw new ConfigError(`${name} must be a whole number, got '${text}'`);
  const value = Number(text);
  if (value < min || value > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}

function logLevelFrom(env: Env): LogLevel {
  const text = env.LOG_LEVEL;
  if (text === undefined || text === "") return DEFAULT_SETTINGS.logLevel;
  const level = LOG_LEVELS.find((candidate) => candidate === text);
  if (level === undefined) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got '${text}'`);
  }
  return level;
}

function limitsFrom(env: Env): ServiceLimits {
  const cap = (name: string, fallback: number) =>
    integerFrom(env, name, fallback, 0, Number.MAX_SAFE_INTEGER);
  return {
    ...DEFAULT_LIMITS,
    maxBodyBytes: integerFrom(env, "MAX_BODY_BYTES", DEFAULT_LIMITS.maxBodyBytes, 1, 64 * MIB),
    maxAnonymousBodyBytes: integerFrom(
      env,
      "ANONYMOUS_BODY_BYTES",
      DEFAULT_LIMITS.maxAnonymousBodyBytes,
      1,
      64 * MIB,
    ),
    maxCrystalUploadsPerKey: integerFrom(
      env,
      "CRYSTAL_UPLOADS_PER_KEY",
      DEFAULT_LIMITS.maxCrystalUploadsPerKey,
      1,
      1_000_000,
    ),
    maxBatch: integerFrom(env, "MAX_BATCH", DEFAULT_LIMITS.maxBatch, 1, 10_000),
    maxResultBytes: integerFrom(
      env,
      "MAX_RESULT_BYTES",
      DEFAULT_LIMITS.maxResultBytes,
      1024,
      1024 * MIB,
    ),
    anonymousDailyCap: cap("ANON_DAILY_CAP", DEFAULT_LIMITS.anonymousDailyCap),
    anonymousAddressDailyCap: cap(
      "ANON_ADDRESS_DAILY_CAP",
      DEFAULT_LIMITS.anonymousAddressDailyCap,
    ),
    anonymousNetworkDailyCap: cap(
      "ANON_NETWORK_DAILY_CAP",
      DEFAULT_LIMITS.anonymousNetworkDailyCap,
    ),
    anonymousNewClientReservePercent: integerFrom(
      env,
      "ANON_NEW_CLIENT_RESERVE_PERCENT",
      DEFAULT_LIMITS.anonymousNewClientReservePercent,
      0,
      50,
    ),
    keyDailyCap: cap("KEY_DAILY_CAP", DEFAULT_LIMITS.keyDailyCap),
    x402PayerDailyCap: cap("X402_DAILY_CAP", DEFAULT_LIMITS.x402PayerDailyCap),
    x402SignatureChecksPerAddress: integerFrom(
      env,
      "X402_SIGNATURE_CHECKS_PER_ADDRESS",
      DEFAULT_LIMITS.x402SignatureChecksPerAddress,
      1,
      1_000_000,
    ),
    x402SignatureChecksPerSecond: integerFrom(
      env,
      "X402_SIGNATURE_CHECKS_PER_SECOND",
      DEFAULT_LIMITS.x402SignatureChecksPerSecond,
      1,
      1_000_000,
    ),
    crystalTenantQuotaBytes: cap(
      "CRYSTAL_TENANT_QUOTA_BYTES",
      DEFAULT_LIMITS.crystalTenantQuotaBytes,
    ),
    crystalPrincipalQuotaBytes: cap(
      "CRYSTAL_KEY_QUOTA_BYTES",
      DEFAULT_LIMITS.crystalPrincipalQuotaBytes,
    ),
    anchorPrincipalQuotaBytes: cap(
      "ANCHOR_KEY_QUOTA_BYTES",
      DEFAULT_LIMITS.anchorPrincipalQuotaBytes,
    ),
    anchorEvaluationQuotaBytes: cap(
      "ANCHOR_EVALUATION_KEY_QUOTA_BYTES",
      DEFAULT_LIMITS.anchorEvaluationQuotaBytes,
    ),
    crystalTtlDays: integerFrom(env, "CRYSTAL_TTL_DAYS", DEFAULT_LIMITS.crystalTtlDays, 0, 36_500),
    notarizationPrincipalQuotaBytes: cap(
      "NOTARIZATION_KEY_QUOTA_BYTES",
      DEFAULT_LIMITS.notarizationPrincipalQuotaBytes,
    ),
    notarizationEvaluationKeyQuotaBytes: cap(
      "NOTARIZATION_EVALUATION_KEY_QUOTA_BYTES",
      DEFAULT_LIMITS.notarizationEvaluationKeyQuotaBytes,
    ),
    notarizationEvaluationQuotaBytes: cap(
      "NOTARIZATION_EVALUATION_QUOTA_BYTES",
      DEFAULT_LIMITS.notarizationEvaluationQuotaBytes,
    ),
    notarizationTtlDays: integerFrom(
      env,
      "NOTARIZATION_TTL_DAYS",
      DEFAULT_LIMITS.notarizationTtlDays,
      0,
      36_500,
    ),
  };
}

function verificationPageFrom(env: Env): boolean {
  const switched = (env.VERIFICATION_PAGE ?? "").trim().toLowerCase();
  if (switched !== "" && switched !== "on" && switched !== "off") {
    throw new ConfigError(`VERIFICATION_PAGE must be on or off, got '${env.VERIFICATION_PAGE}'`);
  }
  return switched !== "off";
}

function evaluationKeysFrom(env: Env): EvaluationKeysConfig | null {
  const switched = (env.EVALUATION_KEYS ?? "").trim().toLowerCase();
  if (switched === "off") return null;
  if (switched !== "" && switched !== "on") {
    throw new ConfigError(`EVALUATION_KEYS must be on or off, got '${env.EVALUATION_KEYS}'`);
  }
  const defaults = DEFAULT_EVALUATION_KEYS;
  return {
    keyDailyCap: integerFrom(env, "EVALUATION_KEY_DAILY_CAP", defaults.keyDailyCap, 1, 1_000_000),
    ttlHours: integerFrom(env, "EVALUATION_KEY_TTL_HOURS", defaults.ttlHours, 1, 24 * 90),
    perAddressDaily: integerFrom(
      env,
      "EVALUATION_KEYS_PER_ADDRESS",
      defaults.perAddressDaily,
      1,
      1_000_000,
    ),
    perNetworkDaily: integerFrom(
      env,
      "EVALUATION_KEYS_PER_NETWORK",
      defaults.perNetworkDaily,
      1,
      1_000_000,
    ),
    perDay: integerFrom(env, "EVALUATION_KEYS_PER_DAY", defaults.perDay, 1, 100_000_000),
    powBits: integerFrom(env, "EVALUATION_POW_BITS", defaults.powBits, 0, 32),
    powRampBits: integerFrom(env, "EVALUATION_POW_RAMP_BITS", defaults.powRampBits, 0, 32),
  };
}

const PROXY_NAMES = new Set(["loopback", "linklocal", "uniquelocal"]);

function trustProxyFrom(env: Env): TrustProxy {
  const text = env.TRUST_PROXY?.trim() ?? "";
  if (text === "") return false;
  return text.split(",").map((entry) => {
    const item = entry.trim();
    if (PROXY_NAMES.has(item)) return item;
    const [address = "", bits, extra] = item.split("/");
    const family = isIP(address);
    const prefixOk =
      bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(
        `TRUST_PROXY is a comma-separated list of proxy addresses, CIDR ranges, loopback, linklocal or uniquelocal; got '${item}'`,
      );
    }
    return item;
  });
}

function cpuPoolFrom(env: Env): CpuPoolConfig {
  const threads = integerFrom(env, "CPU_THREADS", availableParallelism(), 1, 1024);
  const maxQueue = integerFrom(
    env,
    "CPU_MAX_QUEUE",
    threads * QUEUED_TASKS_PER_THREAD,
    0,
    1_000_000,
  );
  return {
    threads,
    maxQueue,
    maxQueuePerPrincipal: integerFrom(env, "CPU_MAX_QUEUE_PER_PRINCIPAL", maxQueue, 0, 1_000_000),
    taskDeadlineMs: integerFrom(
      env,
      "CPU_TASK_DEADLINE_MS",
      DEFAULT_TASK_DEADLINE_MS,
      1,
      3_600_000,
    ),
    taskModules: {},
  };
}

function httpServerFrom(env: Env): HttpServerConfig {
  const ms = (name: string, fallback: number) => integerFrom(env, name, fallback, 1, 3_600_000);
  const reserve = integerFrom(
    env,
    "HEALTH_RESERVE_CONNECTIONS",
    DEFAULT_HEALTH_RESERVE,
    0,
    1_000_000,
  );
  const maxConnections = integerFrom(
    env,
    "MAX_CONNECTIONS",
    defaultMaxConnections(openFileLimit(), reserve),
    1,
    10_000_000,
  );
  return {
    headersTimeoutMs: ms("HEADERS_TIMEOUT_MS", DEFAULT_HTTP_TIMEOUTS.headersTimeoutMs),
    requestTimeoutMs: ms("REQUEST_TIMEOUT_MS", DEFAULT_HTTP_TIMEOUTS.requestTimeoutMs),
    idleTimeoutMs: ms("IDLE_TIMEOUT_MS", DEFAULT_HTTP_TIMEOUTS.idleTimeoutMs),
    keepAliveTimeoutMs: ms("KEEP_ALIVE_TIMEOUT_MS", DEFAULT_HTTP_TIMEOUTS.keepAliveTimeoutMs),
    maxConnections,
    healthReserveConnections: reserve,
    maxConnectionsPerAddress: integerFrom(
      env,
      "MAX_CONNECTIONS_PER_ADDRESS",
      defaultConnectionsPerAddress(maxConnections),
      1,
      10_000_000,
    ),
    minReadBytesPerSecond: integerFrom(
      env,
      "MIN_READ_BYTES_PER_SECOND",
      DEFAULT_CONNECTION_SHARES.minReadBytesPerSecond,
      0,
      1024 * MIB,
    ),
    memoryBudgetBytes: integerFrom(
      env,
      "MEMORY_BUDGET_BYTES",
      DEFAULT_CONNECTION_SHARES.memoryBudgetBytes,
      MIB,
      Number.MAX_SAFE_INTEGER,
    ),
    memorySharePercent: integerFrom(
      env,
      "MEMORY_SHARE_PERCENT",
      DEFAULT_CONNECTION_SHARES.memorySharePercent,
      1,
      100,
    ),
  };
}

/** `MCP_ALLOWED_ORIGINS`, `CORS_ORIGINS`: comma-separated `http(s)://host[:port]` origins. */
function originsFrom(env: Env, name: string): string[] {
  const text = env[name];
  if (!text) return [];
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const url = URL.canParse(entry) ? new URL(entry) : null;
      const originOnly =
        url !== null &&
        (url.protocol === "http:" || url.protocol === "https:") &&
        url.pathname === "/" &&
        url.search === "" &&
        url.hash === "" &&
        url.username === "" &&
        url.password === "";
      if (url === null || !originOnly) {
        throw new ConfigError(`${name} must list origins like https://example.com, got '${entry}'`);
      }
      return url.origin;
    });
}

function clusterNodesFrom(env: Env): RedisNode[] | null {
  const text = env.REDIS_CLUSTER_NODES;
  if (!text) return null;
  try {
    return parseClusterNodes(text);
  } catch (error) {
    throw new ConfigError(
      `REDIS_CLUSTER_NODES must list host:port seeds separated by commas: ${(error as Error).message}`,
    );
  }
}

/**
 * `REDIS_PREFIX`. No braces: Redis Cluster hashes the text between the first `{` and `}` of a
 * key, so a brace in the prefix would become every key's hash tag (src/redis/keys.ts).
 */
function redisPrefixFrom(env: Env): string {
  const prefix = env.REDIS_PREFIX || DEFAULT_SETTINGS.redisPrefix;
  if (/[{}]/.test(prefix)) {
    throw new ConfigError(`REDIS_PREFIX must not contain '{' or '}', got '${prefix}'`);
  }
  return prefix;
}

function urlFrom(env: Env, name: string): string | null {
  const text = env[name];
  if (!text) return null;
  if (!URL.canParse(text)) throw new ConfigError(`${name} must be a URL, got '${text}'`);
  return text;
}

/**
 * Prices are configuration (service.md §9): `X402_PRICE_CALL_USD` (default 0.01),
 * `X402_PRICE_LEASE_USD` (0.01, a 5-minute lease) and `X402_PRICE_DAY_USD` (0.50, a day pass).
 */
function paymentsFrom(env: Env, limits: ServiceLimits, origin: string): PaymentsConfig {
  const facilitatorUrl = env.FACILITATOR_URL || null;
  if (facilitatorUrl !== null && !URL.canParse(facilitatorUrl)) {
    throw new ConfigError(`FACILITATOR_URL must be a URL, got '${facilitatorUrl}'`);
  }
  const publicBaseUrl = env.PUBLIC_BASE_URL || origin;
  if (!URL.canParse(publicBaseUrl)) {
    throw new ConfigError(`PUBLIC_BASE_URL must be a URL, got '${publicBaseUrl}'`);
  }
  const payTo = env.X402_PAY_TO;
  if (!payTo) return { settings: null, facilitatorUrl, publicBaseUrl };
  try {
    const settings = paymentSettings({
      payTo,
      network: env.X402_NETWORK || undefined,
      asset: env.X402_ASSET || undefined,
      pricesUsd: {
        call: env.X402_PRICE_CALL_USD || DEFAULT_SETTINGS.x402Prices.call,
        lease: env.X402_PRICE_LEASE_USD || DEFAULT_SETTINGS.x402Prices.lease,
        day: env.X402_PRICE_DAY_USD || DEFAULT_SETTINGS.x402Prices.day,
      },
      leaseSeconds: limits.leaseSeconds,
      dayPassSeconds: limits.dayPassSeconds,
    });
    return { settings, facilitatorUrl, publicBaseUrl };
  } catch (error) {
    if (error instanceof PaymentConfigError) throw new ConfigError(error.message);
    throw error;
  }
}

// --- Metrics (issue 14, docs/operations.md "Metrics") ---

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "::1", "localhost"]);

/** A few scrapers, each on one kept-alive connection, with room to spare. */
export const DEFAULT_METRICS_MAX_CONNECTIONS = 32;

/**
 * The `/metrics` listener of a process: off unless `portVariable` (`METRICS_PORT` for web
 * processes, `WORKER_METRICS_PORT` for `receiptd worker`, so both can share one environment) is
 * set. It binds `METRICS_HOST` (default 127.0.0.1); any other address must come with
 * `METRICS_TOKEN`, so the figures are never open to the network by accident.
 */
export function metricsListenerFrom(env: Env, portVariable: string): MetricsListenerConfig | null {
  const text = env[portVariable];
  if (text === undefined || text === "") return null;
  const port = integerFrom(env, portVariable, 0, 0, 65_535);
  const host = env.METRICS_HOST || DEFAULT_SETTINGS.metricsHost;
  const token = env.METRICS_TOKEN || null;
  const maxConnections = integerFrom(
    env,
    "METRICS_MAX_CONNECTIONS",
    DEFAULT_METRICS_MAX_CONNECTIONS,
    1,
    100_000,
  );
  if (token !== null && !/^[\x21-\x7e]{16,}$/.test(token)) {
    throw new ConfigError("METRICS_TOKEN must be at least 16 printable characters, no spaces");
  }
  if (token === null && !LOOPBACK_HOSTS.has(host)) {
    throw new ConfigError(
      `METRICS_HOST ${host} is not a loopback address: set METRICS_TOKEN so scrapes must present it`,
    );
  }
  return { host, port, token, maxConnections };
}

// ---- Traces (issue 36) ------------------------------------------------------------------

export const DEFAULT_TRACE_PROTOCOL: TraceProtocol = "http/protobuf";
export const DEFAULT_TRACE_SERVICE_NAME = "receiptd";

/**
 * Tracing is on when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (the base: `/v1/traces` is appended, as the specification says)
 * is set, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The sampler
 * (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`), `OTEL_EXPORTER_OTLP_HEADERS` and the batch
 * settings (`OTEL_BSP_*`) are read by the SDK itself, from the process environment.
 */
export function tracingFrom(env: Env): TracingConfig | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return null;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return null;
  const specific = urlFrom(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = urlFrom(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const tracesUrl = specific ?? (base === null ? null : `${base.replace(/\/+$/, "")}/v1/traces`);
  if (tracesUrl === null) return null;
  const specificProtocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || null;
  const protocolVariable =
    specificProtocol === null
      ? "OTEL_EXPORTER_OTLP_PROTOCOL"
      : "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
  const protocolText =
    specificProtocol ?? (env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || DEFAULT_TRACE_PROTOCOL);
  const protocol = TRACE_PROTOCOLS.find((candidate) => candidate === protocolText);
  if (protocol === undefined) {
    throw new ConfigError(
      `${protocolVariable} must be one of ${TRACE_PROTOCOLS.join(", ")}, got '${protocolText}'`,
    );
  }
  const resourceAttributes = resourceAttributesFrom(env.OTEL_RESOURCE_ATTRIBUTES ?? "");
  return {
    tracesUrl,
    protocol,
    serviceName:
      env.OTEL_SERVICE_NAME?.trim() ||
      resourceAttributes["service.name"] ||
      DEFAULT_TRACE_SERVICE_NAME,
    resourceAttributes,
  };
}

/** `a=1,b=x%20y` → `{ a: "1", b: "x y" }` (the W3C Baggage-like form the specification uses). */
function resourceAttributesFrom(text: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of text.split(",")) {
    if (pair.trim() === "") continue;
    const equals = pair.indexOf("=");
    const key = equals < 0 ? "" : pair.slice(0, equals).trim();
    if (key === "") {
      throw new ConfigError(`OTEL_RESOURCE_ATTRIBUTES must be key=value pairs, got '${pair}'`);
    }
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(equals + 1).trim());
    } catch {
      throw new ConfigError(`OTEL_RESOURCE_ATTRIBUTES has a badly encoded value for '${key}'`);
    }
    attributes[key] = value;
  }
  return attributes;
}

export const DEFAULT_STORE_MIN_FREE_BYTES = 64 * 1024 * 1024;

function storageFrom(env: Env): StorageConfig {
  return {
    minFreeBytes: integerFrom(
      env,
      "STORE_MIN_FREE_BYTES",
      DEFAULT_STORE_MIN_FREE_BYTES,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
  };
}

/**
 * Builds the configuration from `env` (service.md §13 plus `MAX_BODY_BYTES`, `MAX_BATCH`,
 * `MAX_RESULT_BYTES`, `CPU_THREADS`, `CPU_MAX_QUEUE`, the connection limits of `HttpServerConfig` and
 * `MCP_ALLOWED_ORIGINS`), then applies `overrides`. Throws `ConfigError` for a value
 * that is present but unusable, rather than silently falling back to a default.
 */
export function loadConfig(env: Env = process.env, overrides: ConfigOverrides = {}): ServiceConfig {
  const { limits, cpuPool, http, ...rest } = overrides;
  const corpusDir = env.CORPUS_DIR;
  const mergedLimits = { ...limitsFrom(env), ...limits };
  const dataDir = overrides.dataDir ?? resolve(env.DATA_DIR || "./data");
  const host = env.HOST || DEFAULT_SETTINGS.host;
  const port = integerFrom(env, "PORT", DEFAULT_SETTINGS.port, 0, 65_535);
  const origin = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return {
    host,
    port,
    dataDir,
    logLevel: logLevelFrom(env),
    corpusDir: corpusDir ? resolve(corpusDir) : null,
    auditDir: auditDirFrom(env, dataDir),
    auditRetentionDays: integerFrom(
      env,
      "AUDIT_RETENTION_DAYS",
      DEFAULT_SETTINGS.auditRetentionDays,
      0,
      36_500,
    ),
    internalTokenFile: resolve(env.INTERNAL_TOKEN_FILE || join(dataDir, "internal.token")),
    payments: paymentsFrom(env, mergedLimits, origin),
    redisUrl: urlFrom(env, "REDIS_URL"),
    redisClusterNodes: clusterNodesFrom(env),
    redisPrefix: redisPrefixFrom(env),
    queueBudget: queueBudgetFrom(env),
    databaseUrl: urlFrom(env, "DATABASE_URL"),
    databaseSchema: env.DATABASE_SCHEMA || DEFAULT_SETTINGS.databaseSchema,
    storage: storageFrom(env),
    mcpAllowedOrigins: originsFrom(env, "MCP_ALLOWED_ORIGINS"),
    cors: corsFrom(env),
    openApiServerUrl: env.PUBLIC_BASE_URL || "/",
    evaluationKeys: evaluationKeysFrom(env),
    verificationPage: verificationPageFrom(env),
    trustProxy: trustProxyFrom(env),
    shutdownDrainMs: integerFrom(env, "SHUTDOWN_DRAIN_MS", DEFAULT_SHUTDOWN_DRAIN_MS, 1, 3_600_000),
    ...rest,
    limits: mergedLimits,
    cpuPool: { ...cpuPoolFrom(env), ...cpuPool },
    http: { ...httpServerFrom(env), ...http },
    metrics: rest.metrics === undefined ? metricsListenerFrom(env, "METRICS_PORT") : rest.metrics,
    tracing: rest.tracing === undefined ? tracingFrom(env) : rest.tracing,
  };
}
