/**
 * The distributed `JobQueue` (architecture.md "Two modes, one code path"): the producer side of
 * a BullMQ queue. Jobs are added under their business-key id and run on `receiptd worker`
 * processes (queues/bullmq-worker.ts); a submission waits for the outcome through QueueEvents.
 *
 * Not `Job.waitUntilFinished` (protocols.md §5.2: it races and hangs once the job is removed):
 * - events are read from the stream position taken before the first job was added, so an event
 *   is never missed however late the blocking reader starts;
 * - the waiter is registered before the add, and after it the job is looked up once, for the
 *   one case no event will announce: a duplicate id whose job had already finished;
 * - a timer answers `pending` after `waitMs`; the job itself is durable in Redis by then.
 *
 * What the caller is told is what happened (issue 34, finding 1). A submission rejects with
 * `QueueUnavailableError` (the routes answer 503) only when the job certainly never reached
 * Redis or Redis refused it: the process's circuit breaker is open (nothing is sent), the
 * connection is not up (no offline queue), or Redis answered the add with an error. An add
 * that was sent but not answered (a stalled Redis, a connection lost in flight) may still be
 * executed when Redis resumes, and then run on a worker: that submission answers `pending`
 * (the routes' 202 with a status URL), never 503, and the quota it was charged stays charged.
 */
import { Job, Queue, QueueEvents, type Telemetry } from "bullmq";
import { ReplyError } from "ioredis";
import { isUnansweredCommand } from "../src/redis/breaker.js";
import { createRedisClient, type RedisClient } from "../src/redis/client.js";
import { CLOSE_GRACE_MS, settleWithin } from "../src/redis/connection.js";
import { bullmqPrefix } from "../src/redis/keys.js";
import type { RedisOutages } from "../src/redis/outages.js";
import type { RedisTarget } from "../src/redis/target.js";
import {
  assertJobId,
  JobFailedError,
  type JobQueue,
  type JobQueueOptions,
  type JsonData,
  QueueClosedError,
  QueueUnavailableError,
  type SubmitOptions,
  type SubmitOutcome,
} from "./job-queue.js";
import {
  QueueBudget,
  type QueueBudgetLimits,
  QueueFullError,
  SERVICE_PRINCIPAL,
} from "./queue-budget.js";

export interface BullMqQueueOptions extends JobQueueOptions {
  /** `REDIS_URL`, or the Redis Cluster (`REDIS_CLUSTER_NODES`). */
  redis: RedisTarget;
  /**
   * `REDIS_PREFIX`, shared by producers and workers of a deployment; BullMQ's own prefix is
   * made of it and the queue's hash tag (`bullmqPrefix`, src/redis/keys.ts).
   */
  prefix: string;
  /** Runs of a job before it fails for good (BullMQ `attempts`). */
  attempts?: number;
  /** First retry delay; each later one doubles (BullMQ exponential backoff). */
  backoffMs?: number;
  /**
   * The process's Redis outage log: it follows this queue's connections, so that an outage
   * is one line however many connections see it. Without it, connection errors are ignored
   * (the submissions that fail report them).
   */
  outages?: RedisOutages;
  /**
   * The queue's byte budget and a principal's share of it (queues/queue-budget.ts), admitted
   * before each add. Without it the queue has no bound of its own.
   */
  budget?: QueueBudgetLimits;
  /**
   * bullmq-otel, when tracing is on (src/tracing/tracing.ts): each add is a span, and the job
   * carries the submitting request's trace context to the worker that runs it.
   */
  telemetry?: Telemetry;
}

export const DEFAULT_ATTEMPTS = 5;
export const DEFAULT_BACKOFF_MS = 1000;
const DEFAULT_RETAIN_COMPLETED = 1000;
/** Completed jobs are also forgotten after a day, whatever their number. */
const RETAIN_COMPLETED_SECONDS = 24 * 3600;
/**
 * A producer's Redis command (the add, the state look-up, opening the event reader) fails
 * after this long, so a hung Redis (SIGSTOP, a stalled network) does not hold the request,
 * and its socket, for as long as Redis stays silent. An add that timed out may still land, so
 * it is answered `pending`, not as a failure; it also opens the process's circuit breaker, so
 * the submissions after it are refused at once, unsent, until Redis answers a probe.
 */
export const PRODUCER_COMMAND_TIMEOUT_MS = 2000;

type Failure = JobFailedError | QueueClosedError;
type Settle<Result extends JsonData> = (outcome: SubmitOutcome<Result> | Failure) => void;

export class BullMqQueue<Payload extends JsonData, Result extends JsonData>
  implements JobQueue<Payload, Result>
{
  readonly persistent = true;
  readonly #prefix: string;
  readonly #client: RedisClient;
  readonly #eventsClient: RedisClient;
  readonly #queue: Queue;
  readonly #jobOptions: {
    attempts: number;
    backoff: { type: "exponential"; delay: number };
    removeOnComplete: true | { count: number; age: number };
    removeOnFail: true;
  };
  readonly #waiters = new Map<string, Set<Settle<Result>>>();
  readonly #adding = new Set<Promise<unknown>>();
  #events: Promise<QueueEvents> | undefined;
  readonly #unwatch: (() => void)[];
  readonly #outages: RedisOutages | undefined;
  #closing: Promise<void> | undefined;
  readonly #budget: QueueBudget | undefined;

  constructor(
    readonly name: string,
    options: BullMqQueueOptions,
  ) {
    this.#prefix = bullmqPrefix(options.prefix, name);
    this.#outages = options.outages;
    this.#client = createRedisClient(options.redis, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
      commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
      // An add whose master just died fails now (its fate is then judged as below), rather
      // than waiting out a failover of several seconds.
      retryDelayOnFailoverMs: 0,
    });
    // QueueEvents blocks on XREAD: its own connection, which may wait as long as it needs.
    this.#eventsClient = createRedisClient(options.redis, { maxRetriesPerRequest: null });
    this.#queue = new Queue(name, {
      connection: this.#client,
      prefix: this.#prefix,
      ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
    });
    this.#budget =
      options.budget === undefined
        ? undefined
        : new QueueBudget(this.#client, options.prefix, name, options.budget);
    // An `error` listener must exist on each emitter (an unhandled one would end the process).
    const ignore = () => {};
    const outages = options.outages;
    this.#unwatch = [this.#client, this.#eventsClient].map((client, index) => {
      client.on("error", ignore);
      return outages?.watch(client, `queue:${name}:${index}`) ?? (() => {});
    });
    this.#queue.on("error", (error) => outages?.report(error));
    // The breaker's probe, unless the process's shared connection already gave it one.
    outages?.breaker.useProbe(async () => (await this.#client.ping()) === "PONG");
    this.#client.on("ready", () => outages?.breaker.connected());
    const retain = options.retainCompleted ?? DEFAULT_RETAIN_COMPLETED;
    this.#jobOptions = {
      attempts: options.attempts ?? DEFAULT_ATTEMPTS,
      backoff: { type: "exponential", delay: options.backoffMs ?? DEFAULT_BACKOFF_MS },
      removeOnComplete: retain === 0 ? true : { count: retain, age: RETAIN_COMPLETED_SECONDS },
      // A failed job is forgotten (job-queue.ts), so its id runs again when submitted again.
      removeOnFail: true,
    };
  }

  async submit(
    jobId: string,
    payload: Payload,
    options: SubmitOptions,
  ): Promise<SubmitOutcome<Result>> {
    assertJobId(jobId);
    if (this.#closing !== undefined) throw new QueueClosedError(`queue ${this.name} is closed`);
    const breaker = this.#outages?.breaker;
    try {
      breaker?.assertClosed();
      await this.#connected();
      await within(this.#startEvents(), PRODUCER_COMMAND_TIMEOUT_MS, "opening the event reader");
    } catch (error) {
      if (isUnansweredCommand(error)) breaker?.trip(error);
      throw unavailable(this.name, error);
    }
    // Admitted before the add, so that a refusal leaves nothing in Redis (issue 34, finding 3).
    let charged = false;
    try {
      charged = await this.#admit(jobId, payload, options.principal);
    } catch (error) {
      if (error instanceof QueueFullError) throw error;
      // An admission that was not answered may have charged: the reconciler releases it,
      // since no job follows it.
      if (isUnansweredCommand(error)) breaker?.trip(error);
      throw unavailable(this.name, error);
    }
    const { outcome, settle } = this.#wait(jobId, options.waitMs);
    const adding = this.#add(jobId, payload, settle, charged);
    this.#adding.add(adding);
    try {
      await adding;
    } catch (error) {
      if (error instanceof AddNotAccepted) {
        if (charged) await this.#release(jobId);
        settle(unavailable(this.name, error.cause));
      } else {
        // The add was sent and may yet run: the job's own event, or `pending` after waitMs,
        // answers; the caller keeps the job's charge.
        if (isUnansweredCommand(error)) breaker?.trip(error);
        settle({ state: "pending", jobId });
      }
    } finally {
      this.#adding.delete(adding);
    }
    const settled = await outcome;
    if (settled instanceof Error) throw settled;
    return settled;
  }

  /**
   * Adds the job, then looks for an outcome no event will announce. Rejects with
   * `AddNotAccepted` when the job certainly is not in Redis; any other rejection leaves the
   * job's fate unknown (it was sent).
   */
  async #add(
    jobId: string,
    payload: Payload,
    settle: Settle<Result>,
    charged: boolean,
  ): Promise<void> {
    try {
      await this.#queue.add(this.name, payload, { jobId, ...this.#jobOptions });
    } catch (error) {
      if (wasNotAccepted(error)) throw new AddNotAccepted(error);
      throw error;
    }
    // A duplicate add is ignored; if that job has already finished, no event will tell. The
    // state is read before the job: a job read first can finish before its state is read, and
    // it would then be answered completed without its result.
    const state = await this.#queue.getJobState(jobId);
    if (state !== "completed" && state !== "failed") return;
    // The add joined a job that had already finished: no worker will release this charge.
    if (charged) await this.#release(jobId);
    const job = await Job.fromId<Payload, Result>(this.#queue, jobId);
    // Removed in between by retention: its event, or `pending` after waitMs, answers instead.
    if (job === undefined) return;
    if (state === "completed") {
      settle({ state: "completed", jobId, result: job.returnvalue });
    } else if (state === "failed") {
      // Only a job added by another producer with its own removeOnFail is kept failed: forget
      // it, as ours are, so that the next submission runs the id again.
      settle(new JobFailedError(this.name, jobId, job.failedReason));
      await job.remove().catch(() => {});
    }
  }

  /**
   * Charges the job's payload bytes to `principal` (or, unnamed, to the service itself, counted
   * but never refused). True when this submission charged it; false when the job id was
   * already held by an earlier admission, or the queue has no budget.
   */
  async #admit(jobId: string, payload: Payload, principal: string | undefined): Promise<boolean> {
    if (this.#budget === undefined) return false;
    const bytes = Buffer.byteLength(JSON.stringify(payload), "utf8");
    const enforce = principal !== undefined;
    const admission = await this.#budget.admit(
      jobId,
      principal ?? SERVICE_PRINCIPAL,
      bytes,
      enforce,
    );
    return admission === "admitted";
  }

  /** Gives back a charge for a job that will not run; a failure is left to the reconciler. */
  async #release(jobId: string): Promise<void> {
    await this.#budget?.release(jobId).catch(() => {});
  }

  /**
   * BullMQ would wait for a reconnection without bound; a producer answers now instead. Only
   * the first connection, still under way, is waited for: until it connects or fails once.
   */
  async #connected(): Promise<void> {
    const client = this.#client;
    if (client.status === "ready") return;
    if (client.status !== "connecting" && client.status !== "connect") {
      throw new Error(`connection ${client.status}`);
    }
    await new Promise<void>((resolve, reject) => {
      const onReady = () => {
        client.off("error", onFailure);
        resolve();
      };
      const onFailure = (error: Error) => {
        client.off("ready", onReady);
        reject(error);
      };
      client.once("ready", onReady);
      client.once("error", onFailure);
    });
  }

  /** Registers a waiter for the job's outcome, answered `pending` after `waitMs`. */
  #wait(jobId: string, waitMs: number) {
    let settle!: Settle<Result>;
    const outcome = new Promise<SubmitOutcome<Result> | Failure>((resolve) => {
      const timer = setTimeout(() => settle({ state: "pending", jobId }), waitMs);
      settle = (value) => {
        clearTimeout(timer);
        const waiters = this.#waiters.get(jobId);
        waiters?.delete(settle);
        if (waiters?.size === 0) this.#waiters.delete(jobId);
        resolve(value);
      };
    });
    let waiters = this.#waiters.get(jobId);
    if (waiters === undefined) {
      waiters = new Set();
      this.#waiters.set(jobId, waiters);
    }
    waiters.add(settle);
    return { outcome, settle };
  }

  #settleAll(jobId: string, value: SubmitOutcome<Result> | Failure): void {
    for (const settle of [...(this.#waiters.get(jobId) ?? [])]) settle(value);
  }

  /** Starts reading the events stream from its current end, once, before the first add. */
  #startEvents(): Promise<QueueEvents> {
    if (this.#events === undefined) {
      this.#events = this.#openEvents();
      this.#events.catch(() => {
        this.#events = undefined;
      });
    }
    return this.#events;
  }

  async #openEvents(): Promise<QueueEvents> {
    const last = await this.#client.xrevrange(this.#queue.keys.events ?? "", "+", "-", "COUNT", 1);
    const events = new QueueEvents(this.name, {
      connection: this.#eventsClient,
      prefix: this.#prefix,
      lastEventId: last[0]?.[0] ?? "0-0",
    });
    events.on("error", () => {});
    events.on("completed", ({ jobId, returnvalue }) => {
      this.#settleAll(jobId, { state: "completed", jobId, result: returnvalue as Result });
    });
    // QueueEvents reports `failed` once the last attempt has failed, not at each retry.
    events.on("failed", ({ jobId, failedReason }) => {
      this.#settleAll(jobId, new JobFailedError(this.name, jobId, failedReason));
    });
    await events.waitUntilReady();
    return events;
  }

  /**
   * Accepts no more jobs. Accepted jobs live on in Redis and finish on the workers, so
   * submissions still waiting are answered `pending` rather than held.
   */
  close(): Promise<void> {
    if (this.#closing === undefined) this.#closing = this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    // Bounded: adds and BullMQ's own closes wait for Redis, which may be mid-reconnect and
    // never answer; a shutdown drops the connections after the grace period instead.
    await settleWithin(Promise.allSettled([...this.#adding]), CLOSE_GRACE_MS);
    for (const [jobId, waiters] of [...this.#waiters]) {
      for (const settle of [...waiters]) settle({ state: "pending", jobId });
    }
    for (const unwatch of this.#unwatch) unwatch();
    await settleWithin(
      (async () => {
        const events = await this.#events?.catch(() => undefined);
        await events?.close().catch(() => {});
        await this.#queue.close().catch(() => {});
      })(),
      CLOSE_GRACE_MS,
    );
    this.#eventsClient.disconnect();
    this.#client.disconnect();
  }
}

/** `work`, or a rejection once `ms` have passed without it settling. */
async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** An add that certainly left no job in Redis; its `cause` is why. */
class AddNotAccepted extends Error {
  constructor(override readonly cause: unknown) {
    super("the job was not added", { cause });
  }
}

/**
 * Whether a failed add certainly left nothing in Redis: Redis answered it with an error (out
 * of memory under `noeviction`, say), or the client refused to send it (not connected, and no
 * offline queue). A timeout or a connection lost after the write says nothing of the sort.
 */
function wasNotAccepted(error: unknown): boolean {
  if (error instanceof ReplyError) return true;
  return error instanceof Error && /Stream isn't writeable/.test(error.message);
}

function unavailable(queue: string, error: unknown): QueueUnavailableError {
  const message = error instanceof Error ? error.message : String(error);
  return new QueueUnavailableError(`queue ${queue}: Redis is not reachable: ${message}`, {
    cause: error,
  });
}
