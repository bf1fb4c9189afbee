/**
 * The settlements queue (service.md §4, architecture.md): signs a settlement receipt for each
 * settled payment and stores it in the document store, collection `settlements`, one document
 * `{receipt, receipt_digest, stored_at}` per transaction (id: the lower-case tx hash).
 *
 * Three producers feed it: `POST /payment-receipts`, our own x402 path (`SettlementRecorder`),
 * and, in distributed mode, external producers such as a payment gateway that add jobs to the
 * BullMQ queue directly. So the processor trusts no payload: it checks each one against the
 * settlement schema before signing anything.
 *
 * Once per transaction, ever: the document store's `create` keeps the first receipt, and a
 * job for a transaction that already has one answers with that receipt (`idempotent: true`)
 * instead of signing another.
 */

import {
  checkSettlementPayload,
  type Settlement,
  type SettlementReceipt,
  signSettlementReceipt,
} from "../src/payments/settlement-receipt.js";
import type { CollectionName, DocumentStore } from "../src/storage/document-store.js";
import type { JobJournal } from "../src/storage/job-journal.js";
import type { Ed25519Signer } from "../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../src/verifier/json/dump.js";
import { formatUtcSeconds } from "../src/verifier/timestamps.js";
import {
  JobFailedError,
  type JobProcessor,
  type JobQueue,
  type JobQueueOptions,
  QueueClosedError,
} from "./job-queue.js";

export const SETTLEMENTS_QUEUE = "settlements";

/**
 * Only pending jobs are deduplicated by id. A completed job's answer would tell a later
 * submission `idempotent: false`; running the processor again answers from the store
 * (`idempotent: true`) without signing anything.
 */
export const SETTLEMENTS_QUEUE_OPTIONS: JobQueueOptions = { retainCompleted: 0 };
const COLLECTION: CollectionName = "settlements";

/** One job per transaction; `tx` is `0x` + 64 lower-case hex (BullMQ ids cannot hold `:`). */
export function settlementJobId(tx: string): string {
  return `settlement-${tx.slice(2)}`;
}

/** What a job answers: the transaction's receipt, whichever job stored it. */
export type SettlementStored = {
  tx: string;
  /** The receipt's `receipt_digest`. */
  digest: string;
  /** True when the receipt was already stored before this job ran. */
  idempotent: boolean;
  receipt: SettlementReceipt;
};

export type SettlementsQueue = JobQueue<Settlement, SettlementStored>;

/** A settlement checked on a worker, ready to be submitted (`POST /payment-receipts`). */
export interface SettlementJobRequest {
  kind: "submit";
  jobId: string;
  job: Settlement;
}

/** A job whose payload is not a settlement: it fails, and nothing is signed or stored. */
export class InvalidSettlementError extends Error {
  override readonly name = "InvalidSettlementError";
}

type SettlementDocument = { receipt: SettlementReceipt; receipt_digest: string; stored_at: string };

/**
 * The answer for a transaction that already has a document. Documents are written only by
 * this processor, atomically, so one that cannot be read is a fault, not a case to handle.
 */
function storedAnswer(tx: string, bytes: Uint8Array): SettlementStored {
  const document = JSON.parse(Buffer.from(bytes).toString("utf8")) as SettlementDocument;
  if (typeof document.receipt_digest !== "string" || typeof document.receipt !== "object") {
    throw new Error(`the stored settlement document of ${tx} is malformed`);
  }
  return { tx, digest: document.receipt_digest, idempotent: true, receipt: document.receipt };
}

/**
 * `signer` is asked for the service key at each job, so a key rotation is followed without a
 * restart; `now` is the clock of `issued_at` and `stored_at` (the same instant).
 */
export function settlementsProcessor(
  store: DocumentStore,
  signer: () => Ed25519Signer,
  now: () => number = Date.now,
): JobProcessor<Settlement, SettlementStored> {
  return async (payload) => {
    const settlement = checkSettlementPayload(payload);
    if (typeof settlement === "string") throw new InvalidSettlementError(settlement);
    const { tx } = settlement;
    // Most repeats find the receipt here and cost no signature.
    const existing = await store.get(COLLECTION, tx);
    if (existing !== null) return storedAnswer(tx, existing);
    const issuedAt = formatUtcSeconds(new Date(now()));
    const { receipt, digest } = signSettlementReceipt(settlement, signer(), issuedAt);
    const document: SettlementDocument = { receipt, receipt_digest: digest, stored_at: issuedAt };
    const bytes = Buffer.from(dumpCompact(document), "utf8");
    const { created, stored } = await store.create(COLLECTION, tx, bytes);
    if (!created) return storedAnswer(tx, stored);
    return { tx, digest, idempotent: false, receipt };
  };
}

/** Where the recorder reports what it could not do (a pino logger fits); content-free. */
export interface SettlementLog {
  error(details: object, message: string): void;
}

export interface SettlementRecorderOptions {
  queue: SettlementsQueue;
  /** Where jobs wait until the queue holds them durably (`journalDirectory(DATA_DIR, …)`). */
  journal: JobJournal<Settlement>;
  log: SettlementLog;
  /** How often journaled jobs the queue could not take yet are offered again (default 5 s). */
  retryMs?: number;
  /** How long one hand-over to an in-process queue waits for the job (default 60 s). */
  watchMs?: number;
}

const DEFAULT_RETRY_MS = 5_000;
const DEFAULT_WATCH_MS = 60_000;

/**
 * Records the settlements of our x402 path so that a paid answer never names a transaction
 * whose receipt can still be lost (issue 16): `record` resolves only once the receipt job is
 * durable, and the x402 gate releases the response only then.
 *
 * - A persistent queue (BullMQ) holds the job once Redis has acknowledged the add; nothing
 *   else is written.
 * - Otherwise (the in-process queue, or BullMQ failing) the job is written to the journal
 *   (fsync) first, then handed to the queue; the entry is removed once the queue holds the
 *   job durably (BullMQ: added; in-process: the receipt is stored).
 * - `start` replays what a crash left in the journal; a timer offers entries the queue could
 *   not take again. Job ids are the business key and the processor keeps the first receipt of
 *   a transaction, so a replay never writes a second one.
 */
export class SettlementRecorder {
  readonly #queue: SettlementsQueue;
  readonly #journal: JobJournal<Settlement>;
  readonly #log: SettlementLog;
  readonly #retryMs: number;
  readonly #watchMs: number;
  /** Journaled jobs not yet durable in the queue, by job id. */
  readonly #journaled = new Map<string, Settlement>();
  /** Hand-overs under way, by job id. */
  readonly #handingOver = new Map<string, Promise<void>>();
  /** Job ids whose hand-over failure was logged already (logged once, not every retry). */
  readonly #reported = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(options: SettlementRecorderOptions) {
    this.#queue = options.queue;
    this.#journal = options.journal;
    this.#log = options.log;
    this.#retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    this.#watchMs = options.watchMs ?? DEFAULT_WATCH_MS;
  }

  /**
   * Opens the journal and hands over every job a crash left there (in the background: they
   * are on disk already). Throws when the journal cannot be opened or read.
   */
  async start(): Promise<void> {
    await this.#journal.open();
    const { entries, unreadable } = await this.#journal.read();
    if (unreadable.length > 0) {
      this.#log.error(
        { directory: this.#journal.directory, files: unreadable.length },
        "settlement journal holds files it did not write; they are left alone",
      );
    }
    for (const { jobId, payload } of entries) {
      const settlement = checkSettlementPayload(payload);
      if (typeof settlement === "string" || settlementJobId(settlement.tx) !== jobId) {
        this.#log.error({ jobId }, "settlement journal entry is not a settlement; left alone");
        continue;
      }
      this.#journaled.set(jobId, settlement);
    }
    this.#drain();
    this.#timer = setInterval(() => this.#drain(), this.#retryMs);
    this.#timer.unref();
  }

  /** Journaled jobs not yet durable in the queue (tests and shutdown logs read it). */
  get waiting(): number {
    return this.#journaled.size;
  }

  /**
   * Resolves once the receipt job of `paid` (from our x402 path) is durable: in the queue
   * (when it is persistent) or in the journal. Never rejects. When neither can take it — a malformed settlement, or a
   * journal that cannot be written — it logs the settlement's content-free members, so an
   * operator can submit it again (`POST /payment-receipts`), and resolves.
   */
  async record(paid: Settlement): Promise<void> {
    // Checked again: what a receipt may hold is bounded whoever produced the settlement.
    const settlement = checkSettlementPayload(paid);
    if (typeof settlement === "string") {
      this.#log.error(
        { err: new InvalidSettlementError(settlement) },
        "settlement receipt not recorded",
      );
      return;
    }
    const jobId = settlementJobId(settlement.tx);
    if (this.#queue.persistent) {
      try {
        await this.#queue.submit(jobId, settlement, { waitMs: 0 });
        return;
      } catch (error) {
        this.#log.error(
          { err: causeOf(error), tx: settlement.tx },
          "settlements queue unavailable; the receipt job is journaled",
        );
      }
    }
    try {
      await this.#journal.write(jobId, settlement);
    } catch (error) {
      const { ua: _ua, ...described } = settlement;
      this.#log.error(
        { err: error, settlement: described },
        "settlement receipt job could not be made durable",
      );
      return;
    }
    this.#journaled.set(jobId, settlement);
    void this.#handOver(jobId, settlement);
  }

  #drain(): void {
    for (const [jobId, settlement] of this.#journaled) void this.#handOver(jobId, settlement);
  }

  /** Gives a journaled job to the queue; forgets the entry once the queue holds it durably. */
  #handOver(jobId: string, settlement: Settlement): Promise<void> {
    const under = this.#handingOver.get(jobId);
    if (under !== undefined || this.#closed) return under ?? Promise.resolve();
    const persistent = this.#queue.persistent;
    const handOver = this.#queue
      .submit(jobId, settlement, { waitMs: persistent ? 0 : this.#watchMs })
      .then(async (outcome) => {
        // In process, only a completed job has stored the receipt; a pending one runs on
        // and is offered again (joining it) by the timer.
        if (!persistent && outcome.state !== "completed") return;
        this.#journaled.delete(jobId);
        this.#reported.delete(jobId);
        await this.#journal.remove(jobId);
      })
      .catch((error: unknown) => {
        if (this.#reported.has(jobId)) return;
        this.#reported.add(jobId);
        this.#log.error(
          { err: causeOf(error), tx: settlement.tx },
          "settlement receipt job not stored yet; it stays journaled and is retried",
        );
      })
      .finally(() => this.#handingOver.delete(jobId));
    this.#handingOver.set(jobId, handOver);
    return handOver;
  }

  /**
   * Stops offering journaled jobs and waits for the hand-overs under way (their jobs finish
   * on the queue, which is closed after this). Whatever is still journaled then is replayed
   * at the next start.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await Promise.allSettled([...this.#handingOver.values()]);
  }
}

function causeOf(error: unknown): unknown {
  const known = error instanceof JobFailedError || error instanceof QueueClosedError;
  return known ? (error.cause ?? error) : error;
}
