/**
 * The settlements queue (service.md §4, architecture.md): signs a settlement receipt for each
 * settled payment and stores it in the document store, collection `settlements`, one document
 * `{receipt, receipt_digest, stored_at}` per transaction (id: the lower-case tx hash).
 *
 * Three producers feed it: `POST /payment-receipts`, our own x402 path (`recordSettlement`),
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

/** A settlement our x402 path has just completed (the x402 gate's `SettledPayment` fits). */
export interface PaidSettlement {
  /** The facilitator's transaction hash. */
  tx: string;
  network: string;
  asset: string;
  /** Atomic units, a decimal string. */
  amount: string;
  payTo: string;
  /** The paid route's path, without query string. */
  path: string;
  /** The paying request's `User-Agent`; null when it sent none. */
  ua: string | null;
  /** For a payment made over MCP: the JSON-RPC method and the tool. */
  rpc?: string;
  tool?: string;
}

/** Where `recordSettlement` reports what it could not record (a pino logger fits). */
export interface SettlementLog {
  error(details: object, message: string): void;
}

/** How long the background watch of a recorded settlement lasts before it reports it stuck. */
const RECORD_WATCH_MS = 60_000;

/**
 * Puts a settlement of our x402 path on the settlements queue. Returns at once: the paying
 * client's response is never held on the queue. The job runs on; `done` settles when it has
 * (with the stored receipt, or null once a failure has been logged) and never rejects, so
 * callers may ignore it.
 */
export function recordSettlement(
  queue: SettlementsQueue,
  paid: PaidSettlement,
  log: SettlementLog,
): { done: Promise<SettlementStored | null> } {
  const settlement = checkSettlementPayload({
    tx: paid.tx,
    network: paid.network,
    asset: paid.asset,
    amount: paid.amount,
    payTo: paid.payTo,
    path: paid.path,
    // Our own path always knows: no header is `""`, family `none` (an absent `ua` would
    // mean "not known", which only other producers may say).
    ua: paid.ua ?? "",
    rpc: paid.rpc ?? null,
    tool: paid.tool ?? null,
  });
  if (typeof settlement === "string") {
    log.error({ err: new InvalidSettlementError(settlement) }, "settlement receipt not recorded");
    return { done: Promise.resolve(null) };
  }
  const done = queue
    .submit(settlementJobId(settlement.tx), settlement, { waitMs: RECORD_WATCH_MS })
    .then(
      (outcome) => {
        if (outcome.state === "completed") return outcome.result;
        log.error({ tx: settlement.tx }, "settlement receipt job still pending");
        return null;
      },
      (error: unknown) => {
        const known = error instanceof JobFailedError || error instanceof QueueClosedError;
        log.error({ err: known ? (error.cause ?? error) : error }, "settlement receipt failed");
        return null;
      },
    );
  return { done };
}
