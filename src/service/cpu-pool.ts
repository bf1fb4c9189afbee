/**
 * The one thread pool for CPU-bound work (architecture.md): strict parsing, canonical bytes,
 * hashing and signatures run here so the main thread stays free for I/O. The pool has a
 * fixed size and a bounded queue; a full queue is reported as `CpuPoolOverloadedError`,
 * which the service answers with 503 instead of queueing without bound.
 *
 * Every task has a deadline (`deadlineMs`, from the moment it is handed to the pool: waiting
 * for a thread counts) and may carry its client's signal (`clientGone`). A caller whose
 * deadline passes is told `WorkLimitExceededError`, one whose client left `ClientGoneError`,
 * at once; the message that carries its task is aborted once no caller waits for it any more:
 * taken off Piscina's queue if it has not started, otherwise its thread is terminated (a
 * synchronous task cannot be stopped any other way) and Piscina starts a new one in its place.
 */
import { setMaxListeners } from "node:events";
import { setFlagsFromString } from "node:v8";
import type { ResourceLimits } from "node:worker_threads";
import { Piscina } from "piscina";
import type { CpuPoolStats } from "../metrics/metrics.js";
import { CodedError, codedErrorClass } from "../verifier/coded-error.js";
import { DEFAULT_TASK_DEADLINE_MS } from "./config.js";
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

/** A batchable task waiting for a thread, with the caller's promise. */
interface WaitingTask {
  input: unknown;
  transfer: ArrayBuffer[];
  /** Aborted when the caller stops waiting (its deadline, or its client gone). */
  givenUp: AbortSignal;
  /** Called when its message is handed to a thread (the run time starts). */
  started(): void;
  resolve(output: unknown): void;
  reject(error: unknown): void;
}

/** The tasks of one batchable definition waiting for a thread, and its messages in flight. */
interface BatchQueue {
  readonly waiting: WaitingTask[];
  inFlight: number;
}

export type CpuPoolOverloadedErrorCode = "pool_overloaded";
/** The pool's queue is full: the caller should shed the request, not wait. */
export class CpuPoolOverloadedError extends codedErrorClass<CpuPoolOverloadedErrorCode>(
  "pool_overloaded",
) {
  override readonly name = "CpuPoolOverloadedError";
}

/**
 * The task ran past the pool's deadline (`limit`, in ms) and was abandoned. `ranMs`: how long
 * its message had been on a thread by then (0 if it never left the queue), the work it is
 * charged for.
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

/** What a caller may add to a task: the signal that its client left, and its weight. */
export interface RunOptions {
  clientGone?: AbortSignal;
  /** The task's estimated weight (≥ 1) for the pool's fair share (`cost.ts`). */
  cost?: number;
}

/** Piscina's rejections when no thread is free and no queue slot is left. */
const SATURATION_MESSAGES = new Set([
  "Task queue is at limit",
  "No task queue available and all Workers are busy",
]);

export interface CpuPoolOptions {
  threads: number;
  maxQueue: number;
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
  readonly #threads: number;
  readonly #maxQueue: number;
  readonly #deadlineMs: number;
  readonly #batchQueues = new Map<string, BatchQueue>();
  /** Aborted by `terminate`: every caller gives up at once. */
  readonly #terminating = new AbortController();
  #terminated: Promise<void> | null = null;
  #batchedTasks = 0;
  readonly #abandoned = { deadline: 0, clientGone: 0 };

  constructor(options: CpuPoolOptions) {
    this.#modules = options.taskModules ?? {};
    this.#threads = options.threads;
    this.#maxQueue = options.maxQueue;
    this.#deadlineMs = options.deadlineMs ?? DEFAULT_TASK_DEADLINE_MS;
    // One listener per task in flight: many more than Node's leak warning expects.
    setMaxListeners(0, this.#terminating.signal);
    this.#pool = new Piscina({
      minThreads: options.threads,
      maxThreads: options.threads,
      maxQueue: options.maxQueue,
      workerData: options.workerData,
      resourceLimits: cpuWorkerResourceLimits(),
      ...(RUNNING_FROM_SOURCE ? { execArgv: ["--import", "tsx"] } : {}),
    });
  }

  /**
   * Runs `task` on a worker thread with `input`. Everything in `transfer` is moved to the
   * worker, not copied: the caller's buffers are detached afterwards.
   *
   * A small input of a batchable task goes at once when one of its messages could run on a
   * free thread; while all are busy it waits in the task's own queue (bounded by `maxQueue`,
   * as Piscina's is), and the next thread to finish takes everything waiting, up to
   * `MAX_BATCH_ITEMS`, in one message. Batches form only under load, where they save CPU,
   * and never delay a request on an idle pool.
   */
  run<Input, Output>(
    task: TaskDefinition<Input, Output>,
    input: Input,
    transfer: ArrayBuffer[] = [],
    options: RunOptions = {},
  ): Promise<Output> {
    const caller = this.#caller(options.clientGone);
    if (!task.batchable || byteLength(transfer) > MAX_BATCHED_BYTES) {
      caller.started();
      return caller.watch(this.#runMessage(task, input, transfer, caller.signal));
    }
    const key = `${task.endpoint}#${task.kind}`;
    let queue = this.#batchQueues.get(key);
    if (queue === undefined) {
      queue = { waiting: [], inFlight: 0 };
      this.#batchQueues.set(key, queue);
    }
    if (queue.inFlight >= this.#threads && queue.waiting.length >= this.#maxQueue) {
      caller.dispose();
      return Promise.reject(new CpuPoolOverloadedError("the CPU pool's queue is full"));
    }
    const admitted = queue;
    const output = new Promise<Output>((resolve, reject) => {
      const waiting: WaitingTask = {
        input,
        transfer,
        givenUp: caller.signal,
        started: caller.started,
        resolve: resolve as (value: unknown) => void,
        reject,
      };
      admitted.waiting.push(waiting);
      // A task given up before it was sent leaves the queue: no thread ever sees it.
      caller.signal.addEventListener(
        "abort",
        () => {
          const at = admitted.waiting.indexOf(waiting);
          if (at >= 0) admitted.waiting.splice(at, 1);
        },
        { once: true },
      );
    });
    this.#dispatch(task, admitted);
    return caller.watch(output);
  }

  /**
   * The caller's side of one task: `signal` aborts at the deadline or when the client leaves
   * (its reason says which), and `watch` rejects with that reason at once, whatever the
   * message carrying the task still does.
   */
  #caller(clientGone: AbortSignal | undefined) {
    const controller = new AbortController();
    const limitMs = this.#deadlineMs;
    let startedAt: number | null = null;
    const started = () => {
      startedAt ??= performance.now();
    };
    const timer = setTimeout(() => {
      this.#abandoned.deadline++;
      const ranMs = startedAt === null ? 0 : performance.now() - startedAt;
      controller.abort(new WorkLimitExceededError(limitMs, ranMs));
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
    return { signal: controller.signal, watch, dispose, started };
  }

  /** Sends waiting tasks while their messages could run on a free thread. */
  #dispatch<Input, Output>(task: TaskDefinition<Input, Output>, queue: BatchQueue): void {
    while (queue.inFlight < this.#threads && queue.waiting.length > 0) {
      const freeThreads = this.#threads - queue.inFlight;
      const size = Math.min(MAX_BATCH_ITEMS, Math.ceil(queue.waiting.length / freeThreads));
      queue.inFlight++;
      void this.#send(task, queue, queue.waiting.splice(0, size));
    }
  }

  /**
   * One message with `items`. The thread counts as free again, and the next waiting tasks are
   * sent, before the callers hear their answers: a caller that runs its next task at once
   * then finds the thread free, as it would without batching.
   */
  async #send<Input, Output>(
    task: TaskDefinition<Input, Output>,
    queue: BatchQueue,
    items: WaitingTask[],
  ): Promise<void> {
    for (const item of items) item.started();
    let settle: () => void;
    try {
      settle = await this.#answers(task, items);
    } catch (error) {
      settle = () => {
        for (const item of items) item.reject(error);
      };
    }
    queue.inFlight--;
    this.#dispatch(task, queue);
    settle();
  }

  /** Runs `items` (alone, or as a `TaskBatch`); returns how to hand each caller its answer. */
  async #answers<Input, Output>(
    task: TaskDefinition<Input, Output>,
    items: WaitingTask[],
  ): Promise<() => void> {
    const [only] = items;
    if (items.length === 1 && only !== undefined) {
      const output = await this.#runMessage(task, only.input as Input, only.transfer, only.givenUp);
      return () => only.resolve(output);
    }
    const batch: TaskBatch<Input> = { batchOf: items.map((item) => item.input as Input) };
    this.#batchedTasks += items.length;
    const { batchResults } = (await this.#runMessage(
      task,
      batch,
      items.flatMap((item) => item.transfer),
      allAborted(items.map((item) => item.givenUp)),
    )) as unknown as TaskBatchResults<Output>;
    return () =>
      items.forEach((item, i) => {
        const result = batchResults[i];
        if (result !== undefined && "value" in result) item.resolve(result.value);
        else item.reject(result?.error ?? new Error("a batch answer is missing an item"));
      });
  }

  async #runMessage<Input, Output>(
    task: TaskDefinition<Input, Output>,
    input: Input | TaskBatch<Input>,
    transfer: ArrayBuffer[],
    signal: AbortSignal,
  ): Promise<Output> {
    try {
      // Piscina returns what the task module returned; implementTask typed that as Output.
      return (await this.#pool.run(input, {
        filename: this.#modules[task.endpoint] ?? task.module,
        name: task.kind,
        transferList: transfer,
        signal,
      })) as Output;
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
    let waiting = 0;
    for (const queue of this.#batchQueues.values()) waiting += queue.waiting.length;
    return {
      queueSize: this.#pool.queueSize + waiting,
      utilization: this.#pool.utilization,
      threads: this.#pool.threads.length,
      batchedTasks: this.#batchedTasks,
      abandonedTasks: { ...this.#abandoned },
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
    while ([...this.#batchQueues.values()].some((queue) => queue.waiting.length > 0)) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    await this.#pool.close();
  }
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
