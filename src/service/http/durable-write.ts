/**
 * The answer shape of a write that goes through a queue (anchors, settlement receipts): the
 * route waits a bounded time for the job to be durable; a job still running by then is `202`
 * with a status URL, and a store that could not complete the write is `503` with Retry-After —
 * nothing is half-written, so the client simply retries. A queue over its byte budget (or the
 * principal over its share of it) is `503 queue_full`, refused before anything was enqueued.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import {
  JobFailedError,
  type JobQueue,
  type JsonData,
  QueueClosedError,
} from "../../../queues/job-queue.js";
import { QUEUE_FULL_RETRY_AFTER_SECONDS, QueueFullError } from "../../../queues/queue-budget.js";
import { type ErrorCode, errorAnswer, sendAnswer } from "../errors.js";

export interface DurableWrite<Payload extends JsonData> {
  jobId: string;
  job: Payload;
  waitMs: number;
  /** Who the job is charged to in the queue's byte budget (the request's principal). */
  principal: string;
  /** Where the client can read the document once it is stored (`Location` of a 202). */
  statusUrl: string;
  /** Members of the 202 body besides `stored: false` and `status_url`. */
  pending: Record<string, string>;
  /** The 503's stable code and detail, and the (content-free) log message. */
  unavailable: { error: ErrorCode; detail: string; log: string };
  /** Undoes what the route did before submitting (a quota charge), before the 503 is sent. */
  undo?: () => Promise<void>;
}

/**
 * The job's result once durable, or null when `reply` has already been answered (202, or the
 * 503 of `write.unavailable`). The 503 is sent here, not thrown, so that a route answers the
 * same whether or not the service's error handler is registered around it.
 */
export async function submitDurably<Payload extends JsonData, Result extends JsonData>(
  request: FastifyRequest,
  reply: FastifyReply,
  queue: JobQueue<Payload, Result>,
  write: DurableWrite<Payload>,
): Promise<Result | null> {
  try {
    const submitted = await queue.submit(write.jobId, write.job, {
      waitMs: write.waitMs,
      principal: write.principal,
    });
    if (submitted.state === "completed") return submitted.result;
  } catch (error) {
    if (error instanceof QueueFullError) {
      await write.undo?.();
      const { bound, heldBytes, limitBytes } = error;
      const detail =
        bound === "share"
          ? `this principal's queued ${error.queue} jobs hold ${heldBytes} bytes of its share of ${limitBytes} (QUEUE_SHARE_PERCENT of QUEUE_BUDGET_BYTES); nothing was enqueued, retry later`
          : `the ${error.queue} queue holds ${heldBytes} bytes of its budget of ${limitBytes} (QUEUE_BUDGET_BYTES); nothing was enqueued, retry later`;
      sendAnswer(
        reply.header("retry-after", String(QUEUE_FULL_RETRY_AFTER_SECONDS)),
        errorAnswer("queue_full", { detail, limit: limitBytes, held: heldBytes }),
      );
      return null;
    }
    if (!(error instanceof JobFailedError || error instanceof QueueClosedError)) throw error;
    request.log.error({ err: error.cause ?? error }, write.unavailable.log);
    await write.undo?.();
    sendAnswer(
      reply.header("retry-after", "1"),
      errorAnswer(write.unavailable.error, { detail: write.unavailable.detail }),
    );
    return null;
  }
  reply
    .code(202)
    .header("location", write.statusUrl)
    .send({ stored: false, ...write.pending, status_url: write.statusUrl });
  return null;
}
