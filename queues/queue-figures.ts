/**
 * The shape of a queue's figures for `/metrics`: what queues/ reports and src/metrics
 * exports. It lives with the queues, which produce it, and imports nothing, so src/metrics
 * can name it without loading BullMQ (a metrics module importing queues/queue-stats.ts for
 * its types, while queue-stats imported src/metrics for them, was a folder circle).
 */

export const QUEUE_JOB_STATES = ["waiting", "active", "delayed", "failed"] as const;
export type QueueJobState = (typeof QUEUE_JOB_STATES)[number];

/** A BullMQ queue's figures at one moment. */
export interface QueueStats {
  jobs: Record<QueueJobState, number>;
  /** Seconds the oldest waiting job has been ready to run, or 0 when none waits. */
  oldestWaitingSeconds: number;
  /** Payload bytes charged to the queue's budget (queues/queue-budget.ts): waiting and running. */
  budgetBytes: number;
}

/** Where the queue figures of a scrape come from (BullMQ; queues/queue-stats.ts). */
export interface QueueStatsSource {
  readonly names: readonly string[];
  /** Each queue's figures, or null for a queue that could not be read in time. */
  read(): Promise<ReadonlyMap<string, QueueStats | null>>;
}
