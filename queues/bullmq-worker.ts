/**
 * The consumer side of the distributed queues: BullMQ Workers running the same processor
 * functions as the embedded `InProcessQueue`. A job runs at least once (a worker killed
 * mid-job has its job taken over once its lock expires), so processors are idempotent and the
 * document store's `create` keeps every business key to one document.
 */
import { type Job, type Telemetry, UnrecoverableError, Worker } from "bullmq";
import { createRedisClient, type RedisClient } from "../src/redis/client.js";
import { bullmqPrefix } from "../src/redis/keys.js";
import { RedisOutages } from "../src/redis/outages.js";
import type { RedisTarget } from "../src/redis/target.js";
import type { DocumentStore } from "../src/storage/document-store.js";
import type { Ed25519Signer } from "../src/verifier/crypto/ed25519.js";
import { ANCHORS_QUEUE, anchorsProcessor } from "./anchors.js";
import type { JobProcessor, JsonData } from "./job-queue.js";
import { bullmqJobIsLive, QueueBudget } from "./queue-budget.js";
import { InvalidSettlementError, SETTLEMENTS_QUEUE, settlementsProcessor } from "./settlements.js";

/** Where workers report; content-free (queue, job id, error message). A pino logger fits. */
export interface WorkerLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export interface BullMqWorkerOptions {
  /** `REDIS_URL`, or the Redis Cluster (`REDIS_CLUSTER_NODES`). */
  redis: RedisTarget;
  prefix: string;
  /** Jobs of this queue running at once in this process (processors wait on I/O). */
  concurrency?: number;
  /**
   * How long a job's lock lasts without renewal. A worker killed mid-job leaves its job
   * locked this long before another takes it over. BullMQ default: 30 s.
   */
  lockDurationMs?: number;
  /** How often this worker looks for jobs whose lock expired. BullMQ default: 30 s. */
  stalledIntervalMs?: number;
  /** Errors that retrying cannot mend: the job fails at once, without its other attempts. */
  isPermanent?: (error: unknown) => boolean;
  log: WorkerLog;
  /** Told about each failed run of a job; `final` when no attempt is left (`/metrics`). */
  onFailed?: (queue: string, final: boolean) => void;
  /**
   * The process's Redis outage log: one line when Redis goes away (with the cause) and one
   * when it is back, whatever the number of connections and reconnect attempts in between.
   * Share one among the workers of a process; by default each writes its own to `log`.
   */
  outages?: RedisOutages;
  /**
   * How often the queue's byte budget is recomputed from its live jobs (queues/queue-budget.ts);
   * also once at start. Default: a minute.
   */
  reconcileIntervalMs?: number;
  /**
   * bullmq-otel, when tracing is on (src/tracing/tracing.ts): each job runs in a span that
   * continues the trace of the request that submitted it.
   */
  telemetry?: Telemetry;
}

export const DEFAULT_RECONCILE_INTERVAL_MS = 60_000;
export const DEFAULT_WORKER_CONCURRENCY = 8;
export const DEFAULT_LOCK_DURATION_MS = 30_000;
export const DEFAULT_STALLED_INTERVAL_MS = 30_000;

/** A running worker, whatever its job types. */
export interface QueueWorker {
  readonly name: string;
  ready(): Promise<void>;
  close(timeoutMs: number): Promise<void>;
}

export class BullMqWorker<Payload extends JsonData, Result extends JsonData>
  implements QueueWorker
{
  readonly #connection: RedisClient;
  readonly #worker: Worker<Payload, Result>;
  readonly #unwatch: () => void;
  readonly #budget: QueueBudget;
  readonly #reconciler: NodeJS.Timeout;

  constructor(
    readonly name: string,
    processor: JobProcessor<Payload, Result>,
    options: BullMqWorkerOptions,
  ) {
    const { log } = options;
    const outages = options.outages ?? outagesLoggedTo(log);
    const isPermanent = options.isPermanent ?? (() => false);
    // Workers wait on Redis as long as it takes (BullMQ requires maxRetriesPerRequest: null).
    this.#connection = createRedisClient(options.redis, { maxRetriesPerRequest: null });
    this.#connection.on("error", () => {});
    this.#unwatch = outages.watch(this.#connection, `worker:${name}`);
    // The queue's byte budget: a job's bytes are given back once it has completed or failed
    // for good; the reconciler gives back whatever a crash between the two left charged.
    this.#budget = new QueueBudget(this.#connection, options.prefix, name);
    const release = (jobId: string | undefined) => {
      if (jobId === undefined) return;
      this.#budget.release(jobId).catch((error: unknown) => {
        if (!outages.report(error)) log.warn({ queue: name, jobId, err: String(error) }, "budget");
      });
    };
    const reconcile = () => {
      void this.#budget
        .reconcile((jobId) => bullmqJobIsLive(this.#connection, options.prefix, name, jobId))
        .then((released) => {
          if (released > 0) log.info({ queue: name, released }, "queue budget reconciled");
        })
        .catch((error: unknown) => {
          if (!outages.report(error)) log.warn({ queue: name, err: String(error) }, "budget");
        });
    };
    this.#reconciler = setInterval(
      reconcile,
      options.reconcileIntervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS,
    );
    this.#reconciler.unref();
    reconcile();
    this.#worker = new Worker<Payload, Result>(
      name,
      async (job: Job<Payload, Result>) => {
        try {
          return await processor(job.data, job.id ?? "");
        } catch (error) {
          if (!isPermanent(error)) throw error;
          throw new UnrecoverableError(error instanceof Error ? error.message : String(error));
        }
      },
      {
        connection: this.#connection,
        prefix: bullmqPrefix(options.prefix, name),
        concurrency: options.concurrency ?? DEFAULT_WORKER_CONCURRENCY,
        lockDuration: options.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS,
        stalledInterval: options.stalledIntervalMs ?? DEFAULT_STALLED_INTERVAL_MS,
        ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
      },
    );
    // BullMQ's own blocking connection reports here too: connection errors are the outage's.
    this.#worker.on("error", (error) => {
      if (!outages.report(error)) log.error({ queue: name, err: error.message }, "worker");
    });
    this.#worker.on("failed", (job, error) => {
      // An UnrecoverableError (isPermanent) ends the job whatever attempts are left.
      const final =
        job === undefined ||
        error.name === "UnrecoverableError" ||
        job.attemptsMade >= (job.opts.attempts ?? 1);
      options.onFailed?.(name, final);
      if (final) release(job?.id);
      log.warn(
        { queue: name, jobId: job?.id, attempt: job?.attemptsMade, final, err: error.message },
        "job failed",
      );
    });
    this.#worker.on("stalled", (jobId) => log.warn({ queue: name, jobId }, "job stalled"));
    // One line per job, so an operator sees the queue move without reading Redis; the job id is
    // the business key (a digest, a transaction), never the payload or the result.
    this.#worker.on("completed", (job) => {
      const ms =
        job.finishedOn === undefined || job.processedOn === undefined
          ? undefined
          : job.finishedOn - job.processedOn;
      log.info({ queue: name, jobId: job.id, attempt: job.attemptsMade, ms }, "job completed");
      release(job.id);
    });
  }

  /** Resolves once the worker is connected and taking jobs. */
  async ready(): Promise<void> {
    await this.#worker.waitUntilReady();
  }

  /**
   * Takes no more jobs and waits up to `timeoutMs` for the active ones. Jobs still running then
   * are abandoned: their locks expire and another worker runs them again.
   */
  async close(timeoutMs: number): Promise<void> {
    clearInterval(this.#reconciler);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), timeoutMs);
    });
    const closed = this.#worker.close().then(() => false);
    if (await Promise.race([closed, timedOut])) await this.#worker.close(true);
    clearTimeout(timer);
    this.#unwatch();
    this.#connection.disconnect();
  }
}

function outagesLoggedTo(log: WorkerLog): RedisOutages {
  return new RedisOutages({
    warn: (message) => log.warn({}, message),
    info: (message) => log.info({}, message),
  });
}

export interface ReceiptdWorkersOptions extends Omit<BullMqWorkerOptions, "isPermanent"> {
  store: DocumentStore;
  /** The service key, asked per job so that a rotation is followed. */
  signer: () => Ed25519Signer;
}

/** The workers of `receiptd worker`: one per queue the web processes feed. */
export function startReceiptdWorkers(options: ReceiptdWorkersOptions): QueueWorker[] {
  const { store, signer, ...rest } = options;
  const workerOptions = { ...rest, outages: rest.outages ?? outagesLoggedTo(rest.log) };
  const anchors = new BullMqWorker(ANCHORS_QUEUE, anchorsProcessor(store), workerOptions);
  const settlements = new BullMqWorker(SETTLEMENTS_QUEUE, settlementsProcessor(store, signer), {
    ...workerOptions,
    // An invalid payload stays invalid: fail it now instead of retrying it.
    isPermanent: (error) => error instanceof InvalidSettlementError,
  });
  return [anchors, settlements];
}
