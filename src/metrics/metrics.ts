/**
 * Every Prometheus metric of receiptd, defined in one place (issue 14, docs/operations.md).
 *
 * Each process owns one `Registry` (never prom-client's global one), so tests can build several
 * apps in one process and a scrape shows exactly that app's figures. Label values are bounded:
 * routes are Fastify route patterns (`/anchors/:digest`, never a raw URL), statuses numbers,
 * everything else comes from a fixed list below. Figures that live elsewhere (the CPU pool,
 * BullMQ) are read when scraped, not polled.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import {
  QUEUE_JOB_STATES,
  type QueueStats,
  type QueueStatsSource,
} from "../../queues/queue-figures.js";
import type { StoreSpace } from "../storage/document-store.js";
import { VERDICTS, type Verdict } from "../verifier/bundle/result.js";
import { verifierCrypto } from "../verifier/crypto/provider.js";

/** What Prometheus expects in `Content-Type` for the text format prom-client writes. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** Request durations: a cached verdict takes a millisecond, a 1 MiB batch seconds. */
const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

/** The label of a request no route matched (404s, URLs that cannot be decoded). */
export const UNMATCHED_ROUTE = "unmatched";

export const DIGEST_CACHE_RESULTS = ["hit", "miss", "error"] as const;
export type DigestCacheResult = (typeof DIGEST_CACHE_RESULTS)[number];

/** The daily-cap buckets of service.md §9, by kind (never the key id or payer address). */
export const CAP_BUCKETS = ["anonymous", "key", "evaluation", "x402"] as const;
export type CapBucket = (typeof CAP_BUCKETS)[number];

/**
 * How a presented x402 payment ended, each exactly once:
 * - `invalid`: refused locally (undecodable, not matching an offer, bad signature or window);
 * - `limited`: refused before its signature was checked: its client (or the process) had
 *   used its share of signature checks (`X402_SIGNATURE_CHECKS_PER_ADDRESS`, `…_PER_SECOND`);
 * - `replayed`: its nonce was already used;
 * - `capped`: the payer's daily cap was reached;
 * - `unavailable`: no facilitator configured, or the nonce ledger unreachable;
 * - `declined`: the facilitator declined it (at `/verify` or at `/settle`);
 * - `failed`: the facilitator's answer is unknown (unreachable, 5xx, bad answer);
 * - `abandoned`: verified, but the handler did not succeed, so nothing was settled;
 * - `settled`: settled, and the paid answer delivered.
 */
export const PAYMENT_OUTCOMES = [
  "invalid",
  "limited",
  "replayed",
  "capped",
  "unavailable",
  "declined",
  "failed",
  "abandoned",
  "settled",
] as const;
export type PaymentOutcome = (typeof PAYMENT_OUTCOMES)[number];

export const STORE_OPERATIONS = ["get", "create", "replace", "delete", "list"] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];
/** `unavailable`: `DocumentStoreUnavailableError` (503 `store_unavailable`); else `other`. */
export type StoreErrorKind = "unavailable" | "other";

export interface CpuPoolStats {
  /** Tasks waiting for a thread. */
  queueSize: number;
  /** Piscina's utilisation: mean task run time over the pool's capacity, 0–1. */
  utilization: number;
  threads: number;
  /** Tasks that reached a thread in one message with others (micro-batching, cpu-pool.ts). */
  batchedTasks: number;
  /** Tasks given up (issue 22): past `CPU_TASK_DEADLINE_MS`, or their client hung up. */
  abandonedTasks: { deadline: number; clientGone: number };
  /** Principals with tasks waiting (the fair queue, issue 32): a count, never their names. */
  principalsWaiting: number;
  /**
   * Tasks refused 503 `overloaded`: the whole queue full, the principal's own share of it full,
   * or pushed out of the longest queue to make room for another principal's.
   */
  refusedTasks: { queueFull: number; principalQueueFull: number; pushedOut: number };
}

/**
 * The metrics every receiptd process has: Node's process metrics and, where the process talks
 * to BullMQ, its queues. `receiptd worker` uses this alone; web processes `ServiceMetrics`.
 */
export class ProcessMetrics {
  readonly registry = new Registry();
  readonly queueJobs: Gauge<"queue" | "state">;
  readonly queueOldestWaiting: Gauge<"queue">;
  readonly queueUp: Gauge<"queue">;
  readonly queueBudgetBytes: Gauge<"queue">;
  readonly queueJobFailures: Counter<"queue" | "final">;
  readonly storeErrors: Counter<"operation" | "kind">;
  readonly cryptoProvider: Gauge<"provider">;
  #queues: QueueStatsSource | null = null;
  #reading: Promise<ReadonlyMap<string, QueueStats | null>> | null = null;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    const metrics = this;
    this.queueJobs = new Gauge({
      name: "receiptd_queue_jobs",
      help: "Jobs of each BullMQ queue by state (waiting, active, delayed, failed), read at scrape time.",
      labelNames: ["queue", "state"],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [queue, stats] of await metrics.#readQueues()) {
          if (stats === null) continue;
          for (const state of QUEUE_JOB_STATES) this.set({ queue, state }, stats.jobs[state]);
        }
      },
    });
    this.queueOldestWaiting = new Gauge({
      name: "receiptd_queue_oldest_waiting_seconds",
      help: "Lag of each BullMQ queue: seconds its oldest waiting job has been ready to run (0 when none waits).",
      labelNames: ["queue"],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [queue, stats] of await metrics.#readQueues()) {
          if (stats !== null) this.set({ queue }, stats.oldestWaitingSeconds);
        }
      },
    });
    this.queueBudgetBytes = new Gauge({
      name: "receiptd_queue_budget_bytes",
      help: "Payload bytes of each BullMQ queue's waiting and running jobs, charged to its QUEUE_BUDGET_BYTES, read at scrape time.",
      labelNames: ["queue"],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [queue, stats] of await metrics.#readQueues()) {
          if (stats !== null) this.set({ queue }, stats.budgetBytes);
        }
      },
    });
    this.queueUp = new Gauge({
      name: "receiptd_queue_up",
      help: "1 when the BullMQ queue's figures could be read from Redis for this scrape, else 0.",
      labelNames: ["queue"],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [queue, stats] of await metrics.#readQueues()) {
          this.set({ queue }, stats === null ? 0 : 1);
        }
      },
    });
    this.queueJobFailures = new Counter({
      name: "receiptd_queue_job_failures_total",
      help: "Failed runs of BullMQ jobs in this worker process; final=true when no attempt is left.",
      labelNames: ["queue", "final"],
      registers: [this.registry],
    });
    this.storeErrors = new Counter({
      name: "receiptd_store_errors_total",
      help: "Failed document store operations, by operation and kind (unavailable: the store could not be reached; web answers 503).",
      labelNames: ["operation", "kind"],
      registers: [this.registry],
    });
    for (const operation of STORE_OPERATIONS) {
      for (const kind of ["unavailable", "other"]) this.storeErrors.inc({ operation, kind }, 0);
    }
    this.cryptoProvider = new Gauge({
      name: "receiptd_crypto_provider_info",
      help: "1 for the Ed25519 implementation this process verifies and signs with: libsodium, or openssl where sodium-native cannot be used.",
      labelNames: ["provider"],
      registers: [this.registry],
      collect() {
        this.reset();
        this.set({ provider: verifierCrypto().id }, 1);
      },
    });
  }

  /** Reports `source`'s queues from now on (distributed mode). */
  observeQueues(source: QueueStatsSource): void {
    this.#queues = source;
    for (const queue of source.names) {
      for (const final of ["true", "false"]) this.queueJobFailures.inc({ queue, final }, 0);
    }
  }

  /** One read per scrape, shared by the three queue gauges (they are collected together). */
  #readQueues(): Promise<ReadonlyMap<string, QueueStats | null>> {
    const source = this.#queues;
    if (source === null) return Promise.resolve(new Map());
    if (this.#reading === null) {
      this.#reading = source.read().finally(() => {
        this.#reading = null;
      });
    }
    return this.#reading;
  }

  /** The exposition text of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/** The metrics of a web process (`receiptd serve`): requests, verdicts, access, stores. */
export class ServiceMetrics extends ProcessMetrics {
  readonly requestDuration: Histogram<"method" | "route" | "status">;
  readonly verdicts: Counter<"verdict">;
  readonly cpuPoolQueueSize: Gauge;
  readonly cpuPoolUtilization: Gauge;
  readonly cpuPoolThreads: Gauge;
  readonly cpuPoolBatchedTasks: Counter;
  readonly cpuPoolAbandonedTasks: Counter;
  readonly cpuPoolPrincipalsWaiting: Gauge;
  readonly cpuPoolRefusedTasks: Counter;
  readonly digestCache: Counter<"result">;
  readonly capRefusals: Counter<"bucket">;
  readonly payments: Counter<"outcome">;
  readonly signatureChecks: Counter;
  readonly storeFreeBytes: Gauge;
  readonly storeLowSpace: Gauge;
  readonly auditBytes: Gauge;
  #auditBytes: (() => number) | null = null;
  #cpuPool: (() => CpuPoolStats) | null = null;
  #storeSpace: (() => Promise<StoreSpace>) | null = null;

  constructor() {
    super();
    const registers = [this.registry];
    const metrics = this;
    this.requestDuration = new Histogram({
      name: "receiptd_http_request_duration_seconds",
      help: `Time from a request's arrival to its answer, by method, route pattern ("${UNMATCHED_ROUTE}" when none matched) and status.`,
      labelNames: ["method", "route", "status"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.verdicts = new Counter({
      name: "receiptd_verdicts_total",
      help: "Verdicts computed for POST /verify (each bundle of a batch counts; cache hits do not), by verdict.",
      labelNames: ["verdict"],
      registers,
    });
    const pool = (read: (stats: CpuPoolStats) => number) =>
      async function collect(this: Gauge) {
        const stats = metrics.#cpuPool?.();
        if (stats !== undefined) this.set(read(stats));
      };
    this.cpuPoolQueueSize = new Gauge({
      name: "receiptd_cpu_pool_queue_size",
      help: "Tasks waiting for a worker thread of the CPU pool (beyond CPU_MAX_QUEUE requests get 503 overloaded).",
      registers,
      collect: pool((stats) => stats.queueSize),
    });
    this.cpuPoolUtilization = new Gauge({
      name: "receiptd_cpu_pool_utilization",
      help: "Utilisation of the CPU pool since it started (Piscina: mean task run time over capacity, 0-1).",
      registers,
      collect: pool((stats) => stats.utilization),
    });
    this.cpuPoolThreads = new Gauge({
      name: "receiptd_cpu_pool_threads",
      help: "Worker threads of the CPU pool (CPU_THREADS).",
      registers,
      collect: pool((stats) => stats.threads),
    });
    this.cpuPoolBatchedTasks = new Counter({
      name: "receiptd_cpu_pool_batched_tasks_total",
      help: "Tasks that reached a worker thread in one message with others: small verifications that waited while every thread was busy.",
      registers,
      async collect(this: Counter) {
        const stats = metrics.#cpuPool?.();
        if (stats === undefined) return;
        this.reset();
        this.inc(stats.batchedTasks);
      },
    });
    this.cpuPoolAbandonedTasks = new Counter({
      name: "receiptd_cpu_pool_abandoned_tasks_total",
      help: "Tasks given up by the CPU pool, by reason: deadline (past CPU_TASK_DEADLINE_MS, answered 503 work_limit_exceeded) or client_gone (the client hung up); a running one had its thread replaced.",
      labelNames: ["reason"],
      registers,
      async collect(this: Counter) {
        const stats = metrics.#cpuPool?.();
        if (stats === undefined) return;
        this.reset();
        this.inc({ reason: "deadline" }, stats.abandonedTasks.deadline);
        this.inc({ reason: "client_gone" }, stats.abandonedTasks.clientGone);
      },
    });
    this.cpuPoolPrincipalsWaiting = new Gauge({
      name: "receiptd_cpu_pool_principals_waiting",
      help: "Principals (keys, evaluation keys, x402 payers, anonymous addresses) with tasks waiting for a thread of the CPU pool, which serves them in turn.",
      registers,
      collect: pool((stats) => stats.principalsWaiting),
    });
    this.cpuPoolRefusedTasks = new Counter({
      name: "receiptd_cpu_pool_refused_tasks_total",
      help: "Tasks the CPU pool refused (503 overloaded), by reason: queue_full (CPU_MAX_QUEUE), principal_queue_full (CPU_MAX_QUEUE_PER_PRINCIPAL), pushed_out (the newest of the longest queue, to make room for another principal).",
      labelNames: ["reason"],
      registers,
      async collect(this: Counter) {
        const stats = metrics.#cpuPool?.();
        if (stats === undefined) return;
        this.reset();
        this.inc({ reason: "queue_full" }, stats.refusedTasks.queueFull);
        this.inc({ reason: "principal_queue_full" }, stats.refusedTasks.principalQueueFull);
        this.inc({ reason: "pushed_out" }, stats.refusedTasks.pushedOut);
      },
    });
    this.digestCache = new Counter({
      name: "receiptd_digest_cache_requests_total",
      help: "Digest cache lookups of POST /verify?cache=1 by result (hit, miss, error: the cache could not be read).",
      labelNames: ["result"],
      registers,
    });
    this.capRefusals = new Counter({
      name: "receiptd_cap_refusals_total",
      help: "Requests refused with 429 daily_cap_reached, by the kind of bucket (anonymous, key, evaluation, x402).",
      labelNames: ["bucket"],
      registers,
    });
    this.payments = new Counter({
      name: "receiptd_x402_payments_total",
      help: "x402 payments presented, by outcome (invalid, limited, replayed, capped, unavailable, declined, failed, abandoned, settled).",
      labelNames: ["outcome"],
      registers,
    });
    this.signatureChecks = new Counter({
      name: "receiptd_x402_signature_checks_total",
      help: "x402 payment signatures recovered (EIP-712 hashing and ecrecover on the main thread, about 2 ms each): payments refused by the cheap checks or by a signature-check share are not counted.",
      registers,
    });
    // One statfs per gauge and scrape: cheap, and the two are read together.
    const space = (read: (space: StoreSpace) => number) =>
      async function collect(this: Gauge) {
        const reading = await metrics.#storeSpace?.().catch(() => undefined);
        if (reading !== undefined) this.set(read(reading));
      };
    this.storeFreeBytes = new Gauge({
      name: "receiptd_store_free_bytes",
      help: "Embedded mode: bytes free to the service where DATA_DIR/store lives.",
      registers,
      collect: space((reading) => reading.freeBytes),
    });
    this.storeLowSpace = new Gauge({
      name: "receiptd_store_low_space",
      help: "Embedded mode: 1 when free space is under STORE_MIN_FREE_BYTES or a write found the disk full (then /health is 503), else 0.",
      registers,
      collect: space((reading) => (reading.state === "ok" ? 0 : 1)),
    });
    this.auditBytes = new Gauge({
      name: "receiptd_audit_bytes",
      help: "Bytes of the audit directory (AUDIT_DIR): measured at each hourly compaction, plus the lines this process wrote since.",
      registers,
      collect(this: Gauge) {
        const bytes = metrics.#auditBytes?.();
        if (bytes !== undefined) this.set(bytes);
      },
    });
    // Zeros from the start, so that rates and alerts see every series before its first event.
    for (const verdict of VERDICTS) this.verdicts.inc({ verdict }, 0);
    for (const result of DIGEST_CACHE_RESULTS) this.digestCache.inc({ result }, 0);
    for (const bucket of CAP_BUCKETS) this.capRefusals.inc({ bucket }, 0);
    for (const outcome of PAYMENT_OUTCOMES) this.payments.inc({ outcome }, 0);
  }

  /** The embedded document store whose free space scrapes report. */
  observeStoreSpace(space: () => Promise<StoreSpace>): void {
    this.#storeSpace = space;
  }

  /** The audit log whose directory size scrapes report (a number it keeps, no file access). */
  observeAuditBytes(bytes: () => number): void {
    this.#auditBytes = bytes;
  }

  /** The CPU pool whose figures scrapes report. */
  observeCpuPool(stats: () => CpuPoolStats): void {
    this.#cpuPool = stats;
  }

  /** Counts a worker's tally of the verdicts of one request. */
  countVerdicts(tally: Partial<Record<Verdict, number>> | undefined): void {
    if (tally === undefined) return;
    for (const verdict of VERDICTS) {
      const count = tally[verdict];
      if (count !== undefined && count > 0) this.verdicts.inc({ verdict }, count);
    }
  }
}
