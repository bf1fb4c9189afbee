/**
 * The one thread pool for CPU-bound work (architecture.md): strict parsing, canonical bytes,
 * hashing and signatures run here so the main thread stays free for I/O. The pool has a
 * fixed size and a bounded queue; a full queue is reported as `CpuPoolOverloadedError`,
 * which the service answers with 503 instead of queueing without bound.
 */
import { Piscina } from "piscina";
import type { CpuPoolStats } from "../metrics/metrics.js";
import {
  RUNNING_FROM_SOURCE,
  type TaskDefinition,
  type TaskEndpoint,
  workerModuleUrl,
} from "./tasks/define-task.js";

/**
 * V8 lets each isolate's young generation grow to tens of MB. With a thread per core that
 * was a large part of the memory peak under 16 concurrent 1 MiB bodies, and it bought no
 * measurable throughput (bench/): a task's garbage is short-lived, so a smaller nursery only
 * scavenges a little more often.
 */
const WORKER_YOUNG_GENERATION_MB = 16;

/** The pool's queue is full: the caller should shed the request, not wait. */
export class CpuPoolOverloadedError extends Error {
  override readonly name = "CpuPoolOverloadedError";
}

/** Piscina's rejections when no thread is free and no queue slot is left. */
const SATURATION_MESSAGES = new Set([
  "Task queue is at limit",
  "No task queue available and all Workers are busy",
]);

export interface CpuPoolOptions {
  threads: number;
  maxQueue: number;
  /**
   * Another worker module for an endpoint (tests: tasks that block or fail on purpose); it
   * must export the same tasks with the same types.
   */
  taskModules?: Partial<Record<TaskEndpoint, string>>;
  /** Structured-cloned once into every worker (`workerData`): per-service context. */
  workerData: unknown;
}

export class CpuPool {
  readonly #pool: Piscina;
  readonly #modules: Partial<Record<TaskEndpoint, string>>;

  constructor(options: CpuPoolOptions) {
    this.#modules = options.taskModules ?? {};
    this.#pool = new Piscina({
      minThreads: options.threads,
      maxThreads: options.threads,
      maxQueue: options.maxQueue,
      workerData: options.workerData,
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      ...(RUNNING_FROM_SOURCE ? { execArgv: ["--import", "tsx"] } : {}),
    });
  }

  /**
   * Runs `task` on a worker thread with `input`. Everything in `transfer` is moved to the
   * worker, not copied: the caller's buffers are detached afterwards.
   */
  async run<Input, Output>(
    task: TaskDefinition<Input, Output>,
    input: Input,
    transfer: ArrayBuffer[] = [],
  ): Promise<Output> {
    try {
      // Piscina returns what the task module returned; implementTask typed that as Output.
      return (await this.#pool.run(input, {
        filename: this.#modules[task.endpoint] ?? workerModuleUrl(task.endpoint),
        name: task.kind,
        transferList: transfer,
      })) as Output;
    } catch (error) {
      if (error instanceof Error && SATURATION_MESSAGES.has(error.message)) {
        throw new CpuPoolOverloadedError("the CPU pool's queue is full");
      }
      throw error;
    }
  }

  /** The pool's figures for `/metrics`, read when scraped. */
  stats(): CpuPoolStats {
    return {
      queueSize: this.#pool.queueSize,
      utilization: this.#pool.utilization,
      threads: this.#pool.threads.length,
    };
  }

  /** Waits for running and queued tasks, then stops the threads. */
  async close(): Promise<void> {
    await this.#pool.close();
  }
}
