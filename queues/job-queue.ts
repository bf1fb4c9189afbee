/**
 * The queues that carry writes which must not be lost (architecture.md: anchor hosting,
 * settlement receipts). Routes see only this interface: embedded mode runs jobs in-process
 * (`InProcessQueue`), distributed mode runs them on BullMQ (`BullmqQueue`, consumed by
 * `receiptd worker`). So that both behave
 * alike, the contract is what BullMQ can honour:
 * - payloads and results are plain JSON data (they cross Redis as JSON text);
 * - a job is named by a business-key id, and submitting an id that is still pending, or
 *   completed and retained, does not run it again: the caller gets that job's outcome.
 *   Retention is bounded, so processors must be idempotent themselves (the document store's
 *   business keys give "once ever");
 * - a job that failed is forgotten, so submitting its id again runs it again.
 */

import type { JsonData } from "../src/storage/job-journal.js";

/** Data that survives `JSON.stringify` and `JSON.parse` unchanged (defined with the journal). */
export type { JsonData };

/** Does the work of one job; it may run again for the same payload, so it must be idempotent. */
export type JobProcessor<Payload extends JsonData, Result extends JsonData> = (
  payload: Payload,
  jobId: string,
) => Promise<Result>;

/** Options every implementation honours (BullMQ: `removeOnComplete: {count}`). */
export interface JobQueueOptions {
  /**
   * Completed jobs remembered, so that their ids are not run again (oldest forgotten first).
   * 0 for a queue whose processor answers best when asked again.
   */
  retainCompleted?: number;
}

export interface SubmitOptions {
  /**
   * How long to wait for the result. When the job is not done by then the submission answers
   * `pending` and the job carries on; the caller can tell its client to come back later.
   */
  waitMs: number;
  /**
   * Who the job is charged to in a bounded queue (queues/queue-budget.ts): past its share, or
   * the queue's budget, the submission is refused with `QueueFullError` before anything is
   * enqueued. Unnamed: a job the service owes (a paid call's receipt), counted, never refused.
   */
  principal?: string;
}

export type SubmitOutcome<Result extends JsonData> =
  | { state: "completed"; jobId: string; result: Result }
  | { state: "pending"; jobId: string };

export interface JobQueue<Payload extends JsonData, Result extends JsonData> {
  readonly name: string;
  /**
   * True when a job outlives this process once `submit` has accepted it (BullMQ: Redis has
   * acknowledged the add, before any wait); false when it lives in this process's memory
   * until its processor has made it durable (in-process), so that a caller that must not lose
   * it journals it first (job-journal.ts).
   */
  readonly persistent: boolean;
  /**
   * Enqueues the job unless a job with this id is pending or retained, then waits up to
   * `waitMs` for its result. Rejects with `JobFailedError` when the job failed and with
   * `QueueClosedError` once the queue is closing.
   */
  submit(jobId: string, payload: Payload, options: SubmitOptions): Promise<SubmitOutcome<Result>>;
  /** Accepts no more jobs and resolves once every accepted job has finished. */
  close(): Promise<void>;
}

/** The job's processor failed; nothing but its message crosses a distributed queue. */
export class JobFailedError extends Error {
  override readonly name = "JobFailedError";
  constructor(
    readonly queue: string,
    readonly jobId: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export class QueueClosedError extends Error {
  override readonly name: string = "QueueClosedError";
}

/**
 * The queue's backend (Redis) cannot be reached, so the job was not accepted. A kind of
 * `QueueClosedError` because callers answer both alike: not now, nothing was done, retry.
 */
export class QueueUnavailableError extends QueueClosedError {
  override readonly name = "QueueUnavailableError";
}

/**
 * BullMQ's rules for custom ids, applied in every mode so an id that works embedded also
 * works distributed: non-empty, no `:` (its key separator), not all digits (its own ids).
 */
export function assertJobId(jobId: string): void {
  if (jobId.length === 0 || jobId.includes(":") || /^\d+$/.test(jobId)) {
    throw new RangeError(`job id must be non-empty, without ':' and not all digits: ${jobId}`);
  }
}
