/**
 * The two modes of architecture.md, chosen in one place: embedded (memory and files in
 * `DATA_DIR`) unless `REDIS_URL` (or `REDIS_CLUSTER_NODES`) / `DATABASE_URL` say otherwise. Everything above this module
 * sees only the interfaces — `DocumentStore`, `DigestCache`, `CapStore`, `NonceLedger`,
 * `ChallengeLedger`, `SignatureChecks`, `UploadSlots`, `JobQueue` — so
 * no route knows which mode it runs in.
 *
 * The Redis, BullMQ and PostgreSQL clients are imported only by the mode that uses them:
 * together they are about 50 MB of resident memory an embedded instance has no use for.
 */

import { join } from "node:path";
import {
  ANCHORS_QUEUE,
  ANCHORS_QUEUE_OPTIONS,
  type AnchorsQueue,
  anchorsProcessor,
} from "../../queues/anchors.js";
import { InProcessQueue } from "../../queues/in-process-queue.js";
import {
  SETTLEMENTS_QUEUE,
  SETTLEMENTS_QUEUE_OPTIONS,
  type SettlementsQueue,
  settlementsProcessor,
} from "../../queues/settlements.js";
import type { CapStore } from "../access/caps.js";
import {
  type ChallengeLedger,
  MemoryChallengeLedger,
} from "../access/evaluation/challenge-ledger.js";
import { type IdempotencyStore, MemoryIdempotencyStore } from "../access/idempotency-store.js";
import { type CapJournalLog, MemoryCapStore } from "../access/memory-cap-store.js";
import { InProcessUploadSlots, type UploadSlots } from "../access/upload-slots.js";
import type { DigestCache } from "../cache/digest-cache.js";
import { MemoryDigestCache } from "../cache/memory-digest-cache.js";
import { MemoryNonceLedger, type NonceLedger } from "../payments/nonce-ledger.js";
import {
  InProcessSignatureChecks,
  SignatureBudget,
  type SignatureChecks,
} from "../payments/signature-budget.js";
import type { RedisConnection, RedisLog } from "../redis/connection.js";
import type { RedisOutages } from "../redis/outages.js";
import { redisTargetOf } from "../redis/target.js";
import type { DocumentStore } from "../storage/document-store.js";
import { FsDocumentStore } from "../storage/fs-document-store.js";
import { GroupCommitStore } from "../storage/group-commit-store.js";
import { journalDirectory } from "../storage/job-journal.js";
import { openDocumentStore } from "../storage/open.js";
import { activeTracing } from "../tracing/tracing.js";
import type { Ed25519Signer } from "../verifier/crypto/ed25519.js";
import type { ServiceConfig } from "./config.js";

export type DependencyHealth = "up" | "down";

export interface BackendsHealth {
  redis?: DependencyHealth;
  db?: DependencyHealth;
  /** Embedded mode, only when not ok: `full` refuses writes, `low_space` warns. */
  store?: "low_space" | "full";
}

export interface Backends {
  documentStore: DocumentStore;
  digestCache: DigestCache;
  caps: CapStore;
  nonces: NonceLedger;
  /** Spent proof-of-work challenges of evaluation keys (replays are refused). */
  challenges: ChallengeLedger;
  /** `Idempotency-Key` entries of keyed and paid writes (plugins/idempotency.ts). */
  idempotency: IdempotencyStore;
  /**
   * The x402 signature checks per client address: its share across the deployment in
   * distributed mode, in this process when embedded; the process's own share in both.
   */
  signatureChecks: SignatureChecks;
  /** `CRYSTAL_UPLOADS_PER_KEY` slots: per principal across the deployment when distributed. */
  uploads: UploadSlots;
  /** The shared Redis connection in distributed mode (queues open their own), else null. */
  redis: RedisConnection | null;
  /**
   * The state of each external dependency this instance uses, and in embedded mode the
   * document files' space when it is not `ok`.
   */
  health(): Promise<BackendsHealth>;
  close(): Promise<void>;
}

/** A read that touches the store: a database that cannot answer it is down. */
async function storeHealth(store: DocumentStore): Promise<DependencyHealth> {
  try {
    await store.get("keys", "health-probe");
    return "up";
  } catch {
    return "down";
  }
}

/** Settlement jobs run at once in embedded mode (each mostly waits for the shared log sync). */
const SETTLEMENTS_IN_PROCESS_CONCURRENCY = 256;

/** The process's signature shares (`X402_SIGNATURE_CHECKS_*`), on the service clock. */
function signatureBudgetOf(config: ServiceConfig, clock: () => number): SignatureBudget {
  return new SignatureBudget({
    perClientPerSecond: config.limits.x402SignatureChecksPerAddress,
    totalPerSecond: config.limits.x402SignatureChecksPerSecond,
    // The service clock (tests freeze it); a step back only delays the refill.
    now: clock,
  });
}

/**
 * How long an upload slot in Redis outlives a web that never released it (killed mid-upload):
 * the body's deadline, and a minute for the answer (store writes time out well within it).
 */
function uploadSlotTtlMs(config: ServiceConfig): number {
  return config.http.requestTimeoutMs + 60_000;
}

export async function openBackends(
  config: ServiceConfig,
  options: { clock: () => number; log: RedisLog & CapJournalLog; outages?: RedisOutages },
): Promise<Backends> {
  const { clock, log, outages } = options;
  let documentStore = await openDocumentStore(config, { log });
  const cacheLimits = {
    ttlSeconds: config.limits.digestCacheTtlSeconds,
    maxEntries: config.limits.digestCacheMaxEntries,
  };
  if (documentStore instanceof FsDocumentStore) {
    const removed = await documentStore.sweepTemporaryFiles();
    if (removed > 0) log.info(`removed ${removed} temporary files left by earlier writers`);
    if (config.redisUrl === null) {
      // Embedded: settlement receipts are group-committed (issue 33, payments-decisions.md);
      // this process is their only writer. Distributed workers share the directory: not there.
      const grouped = new GroupCommitStore(
        documentStore,
        journalDirectory(config.dataDir, "settlements-log"),
        ["settlements"],
        {
          onCheckpointError: (err) =>
            log.warn({ err }, "settlement checkpoint failed; its log segment is replayed at start"),
        },
      );
      await grouped.open();
      documentStore = grouped;
    }
  }
  const redisTarget = redisTargetOf(config);
  if (redisTarget === null) {
    return backendsOf(config, documentStore, {
      redis: null,
      digestCache: new MemoryDigestCache(cacheLimits, clock),
      // Journaled under DATA_DIR/state, so that a restart forgets no count and no spent
      // challenge (distributed mode keeps both in Redis).
      caps: await MemoryCapStore.open(join(config.dataDir, "state", "caps.log"), clock, log),
      nonces: new MemoryNonceLedger({ now: clock }),
      challenges: await MemoryChallengeLedger.open(
        join(config.dataDir, "state", "challenges.log"),
        clock,
      ),
      // Not journaled: a restart forgets the keys, as it forgets the in-memory nonce ledger
      // (docs/access-decisions.md, "Idempotency-Key").
      idempotency: new MemoryIdempotencyStore(clock),
      signatureChecks: new InProcessSignatureChecks(signatureBudgetOf(config, clock)),
      uploads: new InProcessUploadSlots(config.limits.maxCrystalUploadsPerKey),
    });
  }
  const [
    { openRedis },
    { FallbackCapStore },
    { RedisCapStore },
    { RedisDigestCache },
    { RedisNonceLedger },
    { RedisChallengeLedger },
    { RedisIdempotencyStore },
    { RedisSignatureChecks },
    { RedisUploadSlots },
  ] = await Promise.all([
    import("../redis/connection.js"),
    import("../redis/fallback-cap-store.js"),
    import("../redis/redis-cap-store.js"),
    import("../redis/redis-digest-cache.js"),
    import("../redis/redis-nonce-ledger.js"),
    import("../redis/redis-challenge-ledger.js"),
    import("../redis/redis-idempotency-store.js"),
    import("../redis/redis-signature-budget.js"),
    import("../redis/redis-upload-slots.js"),
  ]);
  const redis = openRedis({ url: redisTarget, prefix: config.redisPrefix, log, outages });
  return backendsOf(config, documentStore, {
    redis,
    digestCache: new RedisDigestCache(redis, cacheLimits, clock),
    // When Redis is briefly down, caps are counted per process (and that is logged) so that
    // verification keeps answering; nonces have no such fallback, so paid calls get 503.
    caps: new FallbackCapStore(new RedisCapStore(redis, clock), { now: clock, log }),
    nonces: new RedisNonceLedger(redis),
    // No fallback either: a replayed challenge cannot be told while Redis is away (503).
    challenges: new RedisChallengeLedger(redis, clock),
    // No fallback: a retry cannot be told from a first request while Redis is away (503).
    idempotency: new RedisIdempotencyStore(redis),
    // Shared per client, and counted in the process while Redis cannot answer (issue 34,
    // finding 6): both bound work or bodies, so a brief per-process bound beats refusing.
    signatureChecks: new RedisSignatureChecks(redis, signatureBudgetOf(config, clock), clock),
    uploads: new RedisUploadSlots(redis, {
      slotTtlMs: uploadSlotTtlMs(config),
      fallback: new InProcessUploadSlots(config.limits.maxCrystalUploadsPerKey),
      now: clock,
    }),
  });
}

function backendsOf(
  config: ServiceConfig,
  documentStore: DocumentStore,
  parts: Omit<Backends, "documentStore" | "health" | "close">,
): Backends {
  const { redis, digestCache, caps, nonces, challenges, idempotency } = parts;
  return {
    ...parts,
    documentStore,
    async health() {
      const report: BackendsHealth = {};
      if (redis !== null) report.redis = await redis.ping();
      if (config.databaseUrl !== null) report.db = await storeHealth(documentStore);
      const space = await documentStore.space?.().catch(() => null);
      if (space !== undefined && space !== null && space.state !== "ok") report.store = space.state;
      return report;
    },
    async close() {
      await digestCache.close();
      await caps.close();
      await nonces.close();
      await challenges.close();
      await idempotency.close();
      await documentStore.close();
      await redis?.close();
    },
  };
}

export interface Queues {
  anchors: AnchorsQueue;
  settlements: SettlementsQueue;
  close(): Promise<void>;
}

/**
 * The queues of the mode: in embedded mode jobs run in this process by the same processors;
 * in distributed mode they go to BullMQ and `receiptd worker` processes run them.
 */
export async function openQueues(
  config: ServiceConfig,
  options: {
    documentStore: DocumentStore;
    signer: () => Ed25519Signer;
    clock: () => number;
    /** The process's outage log, shared with the Redis connection of `openBackends`. */
    outages?: RedisOutages;
  },
): Promise<Queues> {
  const { documentStore, signer, clock, outages } = options;
  const redis = redisTargetOf(config);
  if (redis === null) {
    return queuesOf(
      new InProcessQueue(ANCHORS_QUEUE, anchorsProcessor(documentStore), ANCHORS_QUEUE_OPTIONS),
      new InProcessQueue(
        SETTLEMENTS_QUEUE,
        settlementsProcessor(documentStore, signer, clock),
        // One log sync covers every receipt signed while the previous one ran, so the jobs
        // running at once bound the batch (8 capped it near 8 per 6–8 ms fsync). The queue's
        // byte budget and per-principal shares still bound what waits.
        { ...SETTLEMENTS_QUEUE_OPTIONS, concurrency: SETTLEMENTS_IN_PROCESS_CONCURRENCY },
      ),
    );
  }
  const { BullMqQueue } = await import("../../queues/bullmq-queue.js");
  const telemetry = activeTracing()?.bullmqTelemetry;
  const connection = {
    redis,
    prefix: config.redisPrefix,
    outages,
    budget: config.queueBudget,
    ...(telemetry === undefined ? {} : { telemetry }),
  };
  return queuesOf(
    new BullMqQueue(ANCHORS_QUEUE, { ...connection, ...ANCHORS_QUEUE_OPTIONS }),
    new BullMqQueue(SETTLEMENTS_QUEUE, { ...connection, ...SETTLEMENTS_QUEUE_OPTIONS }),
  );
}

function queuesOf(anchors: AnchorsQueue, settlements: SettlementsQueue): Queues {
  return {
    anchors,
    settlements,
    async close() {
      await anchors.close();
      await settlements.close();
    },
  };
}
