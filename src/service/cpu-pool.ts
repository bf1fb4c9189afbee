/**
 * The one thread pool for CPU-bound work (architecture.md): strict parsing, canonical bytes,
 * hashing and signatures run here so the main thread stays free for I/O. The pool has a
 * fixed size and a bounded queue; a full queue is reported as `CpuPoolOverloadedError`,
 * which the service answers with 503 instead of queueing without bound.
 *
 * Tasks wait per principal and threads serve principals in turn, by the thread time each has
 * used (fair-queue.ts, issue 32): one client's queue of heavy work delays another's task by
 * about one task, a client's long tasks leave a thread free for the others' short ones while
 * those are about, and a task cut at its deadline is charged to its principal all the same.
 *
 * Every task has a deadline (`deadlineMs`, from the moment it is handed to the pool: waiting
 * for a thread counts) and may carry its client's signal (`clientGone`). A caller whose
 * deadline passes is told `WorkLimitExceededError`, one whose client left `ClientGoneError`,
 * at once; the message that carries its task is aborted once no caller waits for it any more:
 * taken off Piscina's queue if it has not started, otherwise its thread is terminated (a
 * synchronous task cannot be stopped any other way) and Piscina starts a new one in its place.
 * A task whose deadline is nearer than its expected thread time when a thread comes free for
 * it is not started at all: it is told `WorkLimitExceededError` having run 0 ms, and its
 * thread is spared the termination.
 */
import { setMaxListeners } from "node:events";
import { setFlagsFromString } from "node:v8";
import type { ResourceLimits } from "node:worker_threads";
import { Piscina } from "piscina";
import type { CpuPoolStats } from "../metrics/metrics.js";
import { activeTracing, type SpanHandle } from "../tracing/tracing.js";
import { CodedError, codedErrorClass } from "../verifier/coded-error.js";
import { DEFAULT_TASK_DEADLINE_MS } from "./config.js";
import {
  FairQueue,
  type FairQueueAdmission,
  type FairQueueEntry,
  type FairQueueMessage,
} from "./fair-queue.js";
import { RUNNING_FROM_SOURCE, type TaskDefinition } from "./tasks/define-task.js";
import type { TaskBatch, TaskBatchResults } from "./tasks/task-batch.js";

/**
 * V8 lets each isolate's young generation grow to tens of MB. With a thread per core that
 * was a large part of the memory peak under 16 concurrent 1 MiB bodies, and it bought no
 * measurable throughput (bench/): a task's garbage is short-lived, so a smaller nursery only
 * scavenges a little more often.
 */
export const WORKER_YOUNG_GENERATION_MB = 16;

/**
 * The `resourceLimits` of a CPU worker thread (the pool's, and the bench's floor server's).
 *
 * A `--max-semi-space-size` given to the process (`npm start` gives the main thread a small
 * one: docs/operations.md) would override the limits of every isolate created later, worker
 * threads included, so this puts the flag back to V8's default, 0 (no override), before
 * threads are started with these limits. Only isolates created afterwards read it: the main
 * thread keeps what it started with.
 */
export function cpuWorkerResourceLimits(): ResourceLimits {
  setFlagsFromString("--max-semi-space-size=0");
  return { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB };
}

/**
 * The most tasks one message carries. Enough to spread a message's fixed cost thin (about 8%
 * of a single-bundle verification unbatched, under 1% at 16), few enough that a batch holds
 * its first answer back by only a few milliseconds.
 */
const MAX_BATCH_ITEMS = 16;
/** Bodies above this size go alone: their own work dwarfs what a message costs. */
const MAX_BATCHED_BYTES = 64 * 1024;

/**
 * Messages whose tasks cost at least this much together are long (fair-queue.ts): the weight
 * of a 256 KiB body (`queueWeightOfBody`), or of a full batch of 16 small bundles, about 50 ms
 * of thread time. One principal's long messages leave a thread to the others while they are
 * about, so their short tasks do not wait for a 1 MiB body's 0.2–0.5 s.
 */
const LONG_MESSAGE_COST = 16;
/**
 * How long after another principal's last task the long messages still leave it a thread: a
 * client sending one request after another, or a page's burst, is about; a principal alone
 * for this long gets every thread back.
 */
const LONG_MESSAGE_RESERVE_MS = 5_000;

/**
 * The most a task's expected thread time counts when deciding whether it can still finish
 * before its deadline (`#send`): the estimate is a mean over recent tasks, which heavy small
 * bodies could inflate, so it may refuse only tasks that have waited all but this long.
 */
const LATE_START_HORIZON_MS = 1_000;

/** A task handed to the pool, with the caller's promise. */
interface PoolTask {
  readonly task: TaskDefinition<unknown, unknown>;
  readonly input: unknown;
  readonly transfer: ArrayBuffer[];
  /** Aborted when the caller stops waiting (its deadline, or its client gone). */
  readonly givenUp: AbortSignal;
  /** When its deadline passes (`performance.now()` time). */
  readonly deadlineAt: number;
  /** Its span, when tracing is on (issue 36); null otherwise, and then nothing is timed. */
  readonly trace: TaskTrace | null;
  resolve(output: unknown): void;
  reject(error: unknown): void;
}

/** What a task's span records besides its own start and end: when a thread took it. */
interface TaskTrace {
  readonly span: SpanHandle;
  readonly admittedAt: number;
  /** When its message was sent to a thread (`performance.now()`), null while it waits. */
  sentAt: number | null;
  /** Tasks in that message: 1, or more when it shared a batch. */
  batchSize: number;
}

export type CpuPoolOverloadedErrorCode = "pool_overloaded";
/** The pool's queue is full: the caller should shed the request, not wait. */
export class CpuPoolOverloadedError extends codedErrorClass<CpuPoolOverloadedErrorCode>(
  "pool_overloaded",
) {
  override readonly name = "CpuPoolOverloadedError";
}

/**
 * The task ran past the pool's deadline (`limit`, in ms) and was abandoned. `ranMs` is the
 * time it held a thread (0 if it never started): what the principal's fair share was charged.
 */
export type WorkLimitExceededErrorCode = "work_limit_exceeded";
export class WorkLimitExceededError extends CodedError<WorkLimitExceededErrorCode> {
  override readonly name = "WorkLimitExceededError";
  constructor(
    readonly limit: number,
    readonly ranMs = 0,
  ) {
    const message = `the task did not finish within ${limit} ms`;
    super("work_limit_exceeded", message, { message });
  }
}

export type ClientGoneErrorCode = "client_gone";
/** The task's client closed its connection: nobody is left to read the answer. */
export class ClientGoneError extends codedErrorClass<ClientGoneErrorCode>("client_gone") {
  override readonly name = "ClientGoneError";
  constructor() {
    super("the client closed its connection");
  }
}

/** What a caller may add to a task. */
export interface RunOptions {
  /** The signal that its client left. */
  clientGone?: AbortSignal;
  /**
   * Whose turn the task takes (`fairShareKey(request)`, fair-share.ts); tasks of no request
   * run under `SYSTEM_PRINCIPAL`.
   */
  principal?: string;
  /** The task's estimated cost, ≥ 1 (default 1): its weight when it is sent to a thread. */
  cost?: number;
}

/** The fair-share key of work no client asked for (startup and self checks). */
export const SYSTEM_PRINCIPAL = "system";

/** Piscina's rejections when no thread is free and no queue slot is left. */
const SATURATION_MESSAGES = new Set([
  "Task queue is at limit",
  "No task queue available and all Workers are busy",
]);

export interface CpuPoolOptions {
  threads: number;
  maxQueue: number;
  /** Tasks one principal may have waiting (default `maxQueue`: the push-out alone shares it). */
  maxQueuePerPrincipal?: number;
  /** The longest a task may take, waiting included, before it is abandoned. */
  deadlineMs?: number;
  /**
   * Another worker module for an endpoint (tests: tasks that block or fail on purpose); it
   * must export the same tasks with the same types.
   */
  taskModules?: Readonly<Record<string, string>>;
  /** Structured-cloned once into every worker (`workerData`): per-service context. */
  workerData: unknown;
}

export class CpuPool {
  readonly #pool: Piscina;
  readonly #modules: Readonly<Record<string, string>>;
  readonly #deadlineMs: number;
  readonly #queue: FairQueue<PoolTask>;
  /** Aborted by `terminate`: every caller gives up at once. */
  readonly #terminating = new AbortController();
  #terminated: Promise<void> | null = null;
  #batchedTasks = 0;
  readonly #abandoned = { deadline: 0, clientGone: 0 };
  readonly #refused = { queueFull: 0, principalQueueFull: 0, pushedOut: 0 };

  constructor(options: CpuPoolOptions) {
    this.#modules = options.taskModules ?? {};
    this.#deadlineMs = options.deadlineMs ?? DEFAULT_TASK_DEADLINE_MS;
    this.#queue = new FairQueue({
      threads: options.threads,
      maxQueue: options.maxQueue,
      maxQueuePerPrincipal: options.maxQueuePerPrincipal ?? options.maxQueue,
      maxMessageItems: MAX_BATCH_ITEMS,
      longTaskCost: LONG_MESSAGE_COST,
      longTaskReserveMs: LONG_MESSAGE_RESERVE_MS,
    });
    // One listener per task in flight: many more than Node's leak warning expects.
    setMaxListeners(0, this.#terminating.signal);
    this.#pool = new Piscina({
      minThreads: options.threads,
      maxThreads: options.threads,
      // Messages are sent only to free threads; Piscina's queue holds one only while a
      // terminated thread is being replaced.
      maxQueue: options.threads,
      workerData: options.workerData,
      resourceLimits: cpuWorkerResourceLimits(),
      ...(RUNNING_FROM_SOURCE ? { execArgv: ["--import", "tsx"] } : {}),
    });
  }

  /**
   * Runs `task` on a worker thread with `input`. Everything in `transfer` is moved to the
   * worker, not copied: the caller's buffers are detached afterwards.
   *
   * Tasks wait in their principal's queue (fair-queue.ts) and threads serve principals in
   * turn. A small input of a batchable task shares its message with others of its kind that
   * wait, up to `MAX_BATCH_ITEMS`: batches form only under load, where they save CPU, and
   * never delay a request on an idle pool.
   */
  run<Input, Output>(
    task: TaskDefinition<Input, Output>,
    input: Input,
    transfer: ArrayBuffer[] = [],
    options: RunOptions = {},
  ): Promise<Output> {
    let entry: FairQueueEntry<PoolTask> | null = null;
    const caller = this.#caller(options.clientGone, () =>
      entry === null ? 0 : this.#queue.ranMs(entry),
    );
    const group =
      task.batchable && byteLength(transfer) <= MAX_BATCHED_BYTES
        ? `${task.endpoint}#${task.kind}`
        : null;
    let admission: FairQueueAdmission<PoolTask> | null = null;
    const trace = this.#trace(task, transfer);
    const output = new Promise<Output>((resolve, reject) => {
      const item: PoolTask = {
        task: task as TaskDefinition<unknown, unknown>,
        input,
        transfer,
        givenUp: caller.signal,
        deadlineAt: performance.now() + this.#deadlineMs,
        trace,
        resolve: resolve as (value: unknown) => void,
        reject,
      };
      admission = this.#queue.admit(
        options.principal ?? SYSTEM_PRINCIPAL,
        item,
        costWeight(options.cost),
        group,
      );
    });
    const admitted = admission as FairQueueAdmission<PoolTask> | null;
    if (admitted === null || "refused" in admitted) {
      caller.dispose();
      if (admitted?.refused === "principal_queue_full") this.#refused.principalQueueFull++;
      else this.#refused.queueFull++;
      const refused = new CpuPoolOverloadedError("the CPU pool's queue is full");
      endTrace(trace, refused);
      return Promise.reject(refused);
    }
    if (admitted.pushedOut !== null) {
      this.#refused.pushedOut++;
      admitted.pushedOut.item.reject(new CpuPoolOverloadedError("the CPU pool's queue is full"));
    }
    const queued = admitted.entry;
    entry = queued;
    // A task given up before it was sent leaves the queue: no thread ever sees it.
    if (caller.signal.aborted) this.#queue.withdraw(queued);
    else
      caller.signal.addEventListener("abort", () => this.#queue.withdraw(queued), { once: true });
    this.#dispatch();
    const answer = caller.watch(output);
    if (trace === null) return answer;
    return answer.then(
      (value) => {
        endTrace(trace, null);
        return value;
      },
      (error: unknown) => {
        endTrace(trace, error);
        throw error;
      },
    );
  }

  /**
   * A span for one task when tracing is on: from its admission to its answer, with the wait
   * for a thread and the thread time as attributes (`endTrace`). Sizes and names only.
   */
  #trace(task: TaskDefinition<unknown, unknown>, transfer: ArrayBuffer[]): TaskTrace | null {
    const tracing = activeTracing();
    if (tracing === null) return null;
    const span = tracing.startSpan(`cpu-pool ${task.endpoint}.${task.kind}`, "internal", {
      "receiptd.cpu.endpoint": task.endpoint,
      "receiptd.cpu.task": task.kind,
      "receiptd.cpu.input_bytes": byteLength(transfer),
    });
    return { span, admittedAt: performance.now(), sentAt: null, batchSize: 0 };
  }

  /**
   * The caller's side of one task: `signal` aborts at the deadline or when the client leaves
   * (its reason says which), and `watch` rejects with that reason at once, whatever the
   * message carrying the task still does.
   */
  #caller(clientGone: AbortSignal | undefined, ranMs: () => number) {
    const controller = new AbortController();
    const limitMs = this.#deadlineMs;
    const timer = setTimeout(() => {
      this.#abandoned.deadline++;
      controller.abort(new WorkLimitExceededError(limitMs, ranMs()));
    }, limitMs);
    const onGone = () => {
      this.#abandoned.clientGone++;
      controller.abort(new ClientGoneError());
    };
    if (clientGone?.aborted) onGone();
    else clientGone?.addEventListener("abort", onGone, { once: true });
    const terminating = this.#terminating.signal;
    const onTerminate = () => controller.abort(terminating.reason);
    if (terminating.aborted) onTerminate();
    else terminating.addEventListener("abort", onTerminate, { once: true });
    const dispose = () => {
      clearTimeout(timer);
      clientGone?.removeEventListener("abort", onGone);
      terminating.removeEventListener("abort", onTerminate);
    };
    const watch = <Output>(output: Promise<Output>): Promise<Output> => {
      const { signal } = controller;
      const abandoned = new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
      return Promise.race([output, abandoned]).finally(dispose);
    };
    return { signal: controller.signal, watch, dispose };
  }

  /** Sends messages while a thread is free and a task waits. */
  #dispatch(): void {
    for (let message = this.#queue.nextMessage(); message !== null; ) {
      void this.#send(message);
      message = this.#queue.nextMessage();
    }
  }

  /**
   * One message. The thread counts as free again (and its principals are charged the time it
   * held the thread), and the next waiting tasks are sent, before the callers hear their
   * answers: a caller that runs its next task at once then finds the thread free, as it
   * would without batching.
   */
  async #send(message: FairQueueMessage<PoolTask>): Promise<void> {
    // A task that waited so long that its deadline will pass before its expected thread time
    // is over is not started: it would be cut (its thread terminated and replaced) for nothing.
    // It is told `work_limit_exceeded` now, having run 0 ms (so it is not charged).
    const items: PoolTask[] = [];
    for (const entry of message.entries) {
      const expectedMs = Math.min(entry.estimatedMs, LATE_START_HORIZON_MS);
      if (entry.item.deadlineAt - message.startedAt >= expectedMs) {
        items.push(entry.item);
        const trace = entry.item.trace;
        if (trace !== null) {
          trace.sentAt = performance.now();
          trace.batchSize = message.entries.length;
        }
      } else {
        this.#abandoned.deadline++;
        entry.item.reject(new WorkLimitExceededError(this.#deadlineMs, 0));
      }
    }
    let settle: () => void;
    try {
      settle = await this.#answers(items);
    } catch (error) {
      settle = () => {
        for (const item of items) item.reject(error);
      };
    }
    this.#queue.finished(
      message,
      items.some((item) => !item.givenUp.aborted),
    );
    this.#dispatch();
    settle();
  }

  /** Runs `items` (alone, or as a `TaskBatch`); returns how to hand each caller its answer. */
  async #answers(items: readonly PoolTask[]): Promise<() => void> {
    const [only] = items;
    if (only === undefined) return () => {};
    if (items.length === 1) {
      const output = await this.#runMessage(only.task, only.input, only.transfer, only.givenUp);
      return () => only.resolve(output);
    }
    const batch: TaskBatch<unknown> = { batchOf: items.map((item) => item.input) };
    this.#batchedTasks += items.length;
    const { batchResults } = (await this.#runMessage(
      only.task,
      batch,
      items.flatMap((item) => item.transfer),
      allAborted(items.map((item) => item.givenUp)),
    )) as TaskBatchResults<unknown>;
    return () =>
      items.forEach((item, i) => {
        const result = batchResults[i];
        if (result !== undefined && "value" in result) item.resolve(result.value);
        else item.reject(result?.error ?? new Error("a batch answer is missing an item"));
      });
  }

  async #runMessage(
    task: TaskDefinition<unknown, unknown>,
    input: unknown,
    transfer: ArrayBuffer[],
    signal: AbortSignal,
  ): Promise<unknown> {
    try {
      return await this.#pool.run(input, {
        filename: this.#modules[task.endpoint] ?? task.module,
        name: task.kind,
        transferList: transfer,
        signal,
      });
    } catch (error) {
      if (error instanceof Error && SATURATION_MESSAGES.has(error.message)) {
        throw new CpuPoolOverloadedError("the CPU pool's queue is full");
      }
      if (signal.aborted) throw signal.reason;
      throw error;
    }
  }

  /** The pool's figures for `/metrics`, read when scraped. */
  stats(): CpuPoolStats {
    return {
      queueSize: this.#pool.queueSize + this.#queue.queued,
      principalsWaiting: this.#queue.principalsWaiting,
      utilization: this.#pool.utilization,
      threads: this.#pool.threads.length,
      batchedTasks: this.#batchedTasks,
      abandonedTasks: { ...this.#abandoned },
      refusedTasks: { ...this.#refused },
    };
  }

  /**
   * Abandons every task, waiting or running, and stops the threads now: a shutdown drain past
   * its deadline. Callers are told `CpuPoolOverloadedError` (another instance may answer).
   */
  terminate(): Promise<void> {
    this.#terminating.abort(new CpuPoolOverloadedError("the service is shutting down"));
    this.#terminated ??= this.#pool.destroy();
    return this.#terminated;
  }

  /** Waits for running and queued tasks, then stops the threads. */
  async close(): Promise<void> {
    if (this.#terminated !== null) return this.#terminated;
    while (this.#queue.queued > 0) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    await this.#pool.close();
  }
}

/** A caller's cost as a scheduling weight: a finite number ≥ 1, else 1. */
function costWeight(cost: number | undefined): number {
  return cost !== undefined && Number.isFinite(cost) && cost >= 1 ? cost : 1;
}

/** Aborts once every one of `signals` has: a batch runs while any of its callers waits. */
function allAborted(signals: readonly AbortSignal[]): AbortSignal {
  const controller = new AbortController();
  let left = signals.length;
  const onAbort = () => {
    if (--left === 0) controller.abort(new ClientGoneError());
  };
  for (const signal of signals) {
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  }
  return controller.signal;
}

function byteLength(buffers: readonly ArrayBuffer[]): number {
  let total = 0;
  for (const buffer of buffers) total += buffer.byteLength;
  return total;
}

/**
 * Ends a task's span: `queue_wait_ms` from admission to its thread, `run_ms` on the thread (its
 * whole message's, when batched), or only the wait when it never reached a thread.
 */
function endTrace(trace: TaskTrace | null, error: unknown): void {
  if (trace === null) return;
  const now = performance.now();
  const { span, admittedAt, sentAt } = trace;
  span.setAttributes(
    sentAt === null
      ? { "receiptd.cpu.queue_wait_ms": now - admittedAt, "receiptd.cpu.started": false }
      : {
          "receiptd.cpu.queue_wait_ms": sentAt - admittedAt,
          "receiptd.cpu.run_ms": now - sentAt,
          "receiptd.cpu.batch_size": trace.batchSize,
          "receiptd.cpu.started": true,
        },
  );
  if (error !== null) span.fail(error);
  span.end();
}
