/**
 * Figures of BullMQ queues for `/metrics` (docs/operations.md): jobs by state and the lag of the
 * oldest waiting job, read from Redis when Prometheus scrapes. Web processes (producers) and
 * `receiptd worker` (consumers) both report them, so a deployment sees its backlog whichever
 * process it scrapes.
 *
 * A scrape must not hang on a Redis that is down: the connection fails fast (no offline queue,
 * one try per command) and each read is bounded by `timeoutMs`; a queue that could not be read
 * is reported as such (`receiptd_queue_up 0`) rather than with stale figures.
 */
import { Queue } from "bullmq";
import { createRedisClient, type RedisClient } from "../src/redis/client.js";
import { bullmqPrefix } from "../src/redis/keys.js";
import type { RedisTarget } from "../src/redis/target.js";
import { queueBudgetKeys } from "./queue-budget.js";
import type { QueueStats, QueueStatsSource } from "./queue-figures.js";

export interface BullMqQueueStatsOptions {
  /** `REDIS_URL`, or the Redis Cluster. */
  redis: RedisTarget;
  /** `REDIS_PREFIX`. */
  prefix: string;
  names: readonly string[];
  /** Longest a scrape waits for Redis. */
  timeoutMs?: number;
  /** Connection errors (ioredis emits them while it reconnects). */
  onError?: (error: Error) => void;
  now?: () => number;
}

export const DEFAULT_STATS_TIMEOUT_MS = 1000;

export class BullMqQueueStats implements QueueStatsSource {
  readonly names: readonly string[];
  readonly #client: RedisClient;
  readonly #queues: Queue[];
  readonly #timeoutMs: number;
  readonly #now: () => number;
  readonly #prefix: string;

  constructor(options: BullMqQueueStatsOptions) {
    this.names = options.names;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_STATS_TIMEOUT_MS;
    this.#now = options.now ?? Date.now;
    this.#prefix = options.prefix;
    const onError = options.onError ?? (() => {});
    // Connected on first use: a process that is never scraped opens no connection for this.
    this.#client = createRedisClient(options.redis, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: true,
    });
    this.#client.on("error", onError);
    this.#queues = options.names.map((name) => {
      const queue = new Queue(name, {
        connection: this.#client,
        prefix: bullmqPrefix(options.prefix, name),
      });
      queue.on("error", onError);
      return queue;
    });
  }

  async read(): Promise<ReadonlyMap<string, QueueStats | null>> {
    const figures = new Map<string, QueueStats | null>();
    const results = await Promise.allSettled(
      this.#queues.map((queue) => withTimeout(this.#readOne(queue), this.#timeoutMs)),
    );
    results.forEach((result, index) => {
      const name = this.#queues[index]?.name;
      if (name !== undefined)
        figures.set(name, result.status === "fulfilled" ? result.value : null);
    });
    return figures;
  }

  async #readOne(queue: Queue): Promise<QueueStats> {
    if (this.#client.status === "wait") await this.#client.connect();
    const counts = await queue.getJobCounts("wait", "active", "delayed", "failed");
    // BullMQ lists waiting jobs newest first; ascending order puts the oldest first.
    const [oldest] = await queue.getJobs(["wait"], 0, 0, true);
    const budget = await this.#client.hget(
      queueBudgetKeys(this.#prefix, queue.name).bytes,
      "total",
    );
    let oldestWaitingSeconds = 0;
    if (oldest !== undefined) {
      // A delayed job (a retry's backoff included) is ready only once its delay has passed.
      const readySince = oldest.timestamp + (oldest.delay ?? 0);
      oldestWaitingSeconds = Math.max(0, (this.#now() - readySince) / 1000);
    }
    return {
      jobs: {
        waiting: counts.wait ?? 0,
        active: counts.active ?? 0,
        delayed: counts.delayed ?? 0,
        failed: counts.failed ?? 0,
      },
      oldestWaitingSeconds,
      budgetBytes: Number(budget ?? 0),
    };
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#queues.map((queue) => queue.close()));
    this.#client.disconnect();
  }
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timedOut]).finally(() => clearTimeout(timer));
}
