/**
 * The embedded `JobQueue`: jobs run in this process, on the event loop, by the same processor
 * functions the distributed workers will run. Nothing is persisted here — a job is durable
 * once its processor has made it durable (the document store writes before resolving), and
 * a submission answers only then — so a crash loses only jobs that were never acknowledged.
 */
import {
  assertJobId,
  JobFailedError,
  type JobProcessor,
  type JobQueue,
  type JobQueueOptions,
  type JsonData,
  QueueClosedError,
  type SubmitOptions,
  type SubmitOutcome,
} from "./job-queue.js";

export interface InProcessQueueOptions extends JobQueueOptions {
  /** Jobs running at once; the rest wait in submission order. */
  concurrency?: number;
}

const DEFAULT_CONCURRENCY = 8;
const DEFAULT_RETAIN_COMPLETED = 1000;

export class InProcessQueue<Payload extends JsonData, Result extends JsonData>
  implements JobQueue<Payload, Result>
{
  readonly persistent = false;
  readonly #processor: JobProcessor<Payload, Result>;
  readonly #concurrency: number;
  readonly #retainCompleted: number;
  readonly #pending = new Map<string, Promise<Result>>();
  readonly #completed = new Map<string, Result>();
  /** Jobs waiting for a free slot, each released by calling its function. */
  readonly #waiting: (() => void)[] = [];
  #running = 0;
  #closed = false;

  constructor(
    readonly name: string,
    processor: JobProcessor<Payload, Result>,
    options: InProcessQueueOptions = {},
  ) {
    this.#processor = processor;
    this.#concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.#retainCompleted = options.retainCompleted ?? DEFAULT_RETAIN_COMPLETED;
  }

  async submit(
    jobId: string,
    payload: Payload,
    options: SubmitOptions,
  ): Promise<SubmitOutcome<Result>> {
    assertJobId(jobId);
    const completed = this.#completed.get(jobId);
    if (completed !== undefined) return { state: "completed", jobId, result: completed };
    let job = this.#pending.get(jobId);
    if (job === undefined) {
      if (this.#closed) throw new QueueClosedError(`queue ${this.name} is closed`);
      job = this.#run(jobId, payload);
      this.#pending.set(jobId, job);
    }
    return waitFor(job, jobId, options.waitMs);
  }

  async #run(jobId: string, payload: Payload): Promise<Result> {
    await this.#slot();
    try {
      const result = await this.#processor(payload, jobId);
      this.#remember(jobId, result);
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new JobFailedError(this.name, jobId, message, { cause: error });
    } finally {
      this.#pending.delete(jobId);
      this.#running -= 1;
      this.#waiting.shift()?.();
    }
  }

  async #slot(): Promise<void> {
    if (this.#running >= this.#concurrency) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#running += 1;
  }

  #remember(jobId: string, result: Result): void {
    if (this.#retainCompleted === 0) return;
    this.#completed.set(jobId, result);
    if (this.#completed.size > this.#retainCompleted) {
      const oldest = this.#completed.keys().next().value;
      if (oldest !== undefined) this.#completed.delete(oldest);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#pending.values()]);
  }
}

async function waitFor<Result extends JsonData>(
  job: Promise<Result>,
  jobId: string,
  waitMs: number,
): Promise<SubmitOutcome<Result>> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<SubmitOutcome<Result>>((resolve) => {
    timer = setTimeout(() => resolve({ state: "pending", jobId }), waitMs);
  });
  try {
    return await Promise.race([
      job.then((result): SubmitOutcome<Result> => ({ state: "completed", jobId, result })),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
