/**
 * The metrics of `receiptd worker`: Node's process metrics, the BullMQ queues it consumes (jobs
 * by state, lag, failed runs) and its document store's errors, on `WORKER_METRICS_PORT`.
 */
import type { WorkerLog } from "../../queues/bullmq-worker.js";
import { BullMqQueueStats } from "../../queues/queue-stats.js";
import type { RedisTarget } from "../redis/target.js";
import type { DocumentStore } from "../storage/document-store.js";
import { ProcessMetrics } from "./metrics.js";
import { observeDocumentStore } from "./observe.js";
import { type MetricsListenerConfig, startMetricsServer } from "./server.js";

export interface WorkerMetrics {
  /** The scrape URL served (`http://host:port/metrics`), or null when nothing is served. */
  readonly url: string | null;
  /** Counts the failed runs of the worker's jobs (BullMqWorkerOptions.onFailed). */
  onFailed(queue: string, final: boolean): void;
  /** `store`, its failures counted. */
  observeStore(store: DocumentStore): DocumentStore;
  close(): Promise<void>;
}

export interface WorkerMetricsOptions {
  /** Null: nothing is served (figures are still kept, at no cost worth the name). */
  listener: MetricsListenerConfig | null;
  redis: RedisTarget;
  prefix: string;
  queues: readonly string[];
  log: WorkerLog;
}

export async function startWorkerMetrics(options: WorkerMetricsOptions): Promise<WorkerMetrics> {
  const { log } = options;
  const metrics = new ProcessMetrics();
  const stats = new BullMqQueueStats({
    redis: options.redis,
    prefix: options.prefix,
    names: options.queues,
  });
  metrics.observeQueues(stats);
  let server: Awaited<ReturnType<typeof startMetricsServer>> | null = null;
  if (options.listener !== null) {
    try {
      server = await startMetricsServer(
        options.listener,
        () => metrics.render(),
        (error) => log.error({ err: String(error) }, "metrics scrape failed"),
      );
    } catch (error) {
      await stats.close();
      throw error;
    }
    log.info({ url: `${server.url}/metrics` }, "metrics listening");
  }
  return {
    url: server === null ? null : `${server.url}/metrics`,
    onFailed: (queue, final) => metrics.queueJobFailures.inc({ queue, final: String(final) }),
    observeStore: (store) =>
      observeDocumentStore(store, (operation, kind) =>
        metrics.storeErrors.inc({ operation, kind }),
      ),
    async close() {
      await server?.close();
      await stats.close();
    },
  };
}
