/**
 * The one thread pool for CPU-bound work (architecture.md): strict parsing, canonical bytes,
 * hashing and signatures run here so the main thread stays free for I/O. The pool has a
 * fixed size and a bounded queue; a full queue is reported as `CpuPoolOverloadedError`,
 * which the service answers with 503 instead of queueing without bound.
 */
import { Piscina } from "piscina";

/**
 * Task modules are loaded by worker threads, which only run JavaScript. Under tsx (tests,
 * development) this file is TypeScript and so are the task modules; in dist both are `.js`.
 */
const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");

/** File URL of `workers/<name>` next to the running code, in the running code's language. */
export function taskModuleUrl(name: string): string {
  const extension = RUNNING_FROM_SOURCE ? "ts" : "js";
  return new URL(`../../workers/${name}.${extension}`, import.meta.url).href;
}

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
  /** Structured-cloned once into every worker (`workerData`): per-service context. */
  workerData: unknown;
}

export class CpuPool {
  readonly #pool: Piscina;

  constructor(options: CpuPoolOptions) {
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
   * Runs the default export of `taskModule` with `task`. Everything in `transfer` is moved to
   * the worker, not copied: the caller's buffers are detached afterwards.
   */
  async run<Result>(
    taskModule: string,
    task: unknown,
    transfer: ArrayBuffer[] = [],
  ): Promise<Result> {
    try {
      return (await this.#pool.run(task, {
        filename: taskModule,
        transferList: transfer,
      })) as Result;
    } catch (error) {
      if (error instanceof Error && SATURATION_MESSAGES.has(error.message)) {
        throw new CpuPoolOverloadedError("the CPU pool's queue is full");
      }
      throw error;
    }
  }

  /** Waits for running and queued tasks, then stops the threads. */
  async close(): Promise<void> {
    await this.#pool.close();
  }
}
