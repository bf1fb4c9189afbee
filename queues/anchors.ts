/**
 * The anchors queue (service.md §2, architecture.md): hosts OpenTimestamps proofs in the
 * document store, collection `anchors`, one document per digest. The proof has already been
 * parsed and checked against its digest on a worker thread; this processor only decides what
 * to store, and stores it idempotently:
 * - no document yet → create it;
 * - the same proof bytes again → nothing is written;
 * - a proof with strictly more attestations (an upgraded proof) → replace the document,
 *   compare-and-set, re-deciding after losing a race;
 * - any other proof → the stored document is kept.
 *
 * The collection also holds the anchor quota usage (`usage/principal/<principal>`, charged by
 * the route before a job is queued; src/storage/usage.ts), under ids no digest can take.
 */
import type { CollectionName, DocumentStore } from "../src/storage/document-store.js";
import type { AnchorStatus, Attestation } from "../src/verifier/anchor/index.js";
import { dumpCompact } from "../src/verifier/json/dump.js";
import { formatUtcSeconds } from "../src/verifier/timestamps.js";
import type { JobProcessor, JobQueue, JobQueueOptions } from "./job-queue.js";

export const ANCHORS_QUEUE = "anchors";

/**
 * Only pending jobs are deduplicated. A completed job's answer describes the store as it was
 * (a proof posted again after an upgrade would be told `created`); running the processor
 * again is cheap and answers from the store as it is now (`unchanged`, `kept`).
 */
export const ANCHORS_QUEUE_OPTIONS: JobQueueOptions = { retainCompleted: 0 };
const COLLECTION: CollectionName = "anchors";

/** The digest form of `POST /anchors` and `GET /anchors/{digest}`; hex of either case. */
export const ANCHOR_DIGEST_PATTERN = "^sha256:[0-9a-fA-F]{64}$";
const ANCHOR_DIGEST = new RegExp(ANCHOR_DIGEST_PATTERN);

/** The document id of a digest in `ANCHOR_DIGEST_PATTERN` form: lower-case hex. */
export function anchorId(digest: string): string | null {
  return ANCHOR_DIGEST.test(digest) ? digest.toLowerCase() : null;
}

/**
 * One job per digest and proof: the same proof posted twice is one job, an upgraded proof
 * for the same digest is another. `proofSha256` is the hex SHA-256 of the proof bytes.
 */
export function anchorJobId(id: string, proofSha256: string): string {
  return `anchor-${id.slice("sha256:".length)}-${proofSha256}`;
}

/**
 * An attestation as a job carries it. Jobs cross Redis as JSON text, where a block height
 * beyond 2^53 - 1 (only a hostile proof has one) has no exact form, so such a height travels
 * as its decimal string and is written to the document as the integer it is.
 */
export type JobAttestation =
  | Exclude<Attestation, { kind: "bitcoin" | "litecoin" }>
  | { kind: "bitcoin" | "litecoin"; value: number | string };

export function jobAttestation(attestation: Attestation): JobAttestation {
  if (attestation.kind === "pending" || attestation.kind === "unknown") return attestation;
  const { kind, value } = attestation;
  return { kind, value: typeof value === "bigint" ? value.toString() : value };
}

function documentAttestation(attestation: JobAttestation): Attestation {
  if (attestation.kind === "pending" || attestation.kind === "unknown") return attestation;
  const { kind, value } = attestation;
  return { kind, value: typeof value === "string" ? BigInt(value) : value };
}

export type AnchorJob = {
  /** The document id, `sha256:<64 lower-case hex>`. */
  digest: string;
  /** Standard base64 of the proof bytes, canonical (it round-trips). */
  proof: string;
  note: string | null;
  /** The proof's status checked against its digest without headers. */
  status: AnchorStatus;
  attestations: JobAttestation[];
};

/** What the job did: the stored document is new, replaced, identical, or kept instead. */
export type AnchorOutcome = "created" | "replaced" | "unchanged" | "kept";

export type AnchorStored = {
  outcome: AnchorOutcome;
  digest: string;
  /** Status and proof size of the document stored afterwards. */
  status: string;
  bytes: number;
};

/** The stored document, members in the order service.md §2 lists them. */
type AnchorDocument = Omit<AnchorJob, "attestations"> & {
  stored_at: string;
  attestations: Attestation[];
};

function documentBytes(job: AnchorJob, note: string | null): Uint8Array {
  const document: AnchorDocument = {
    digest: job.digest,
    proof: job.proof,
    note,
    status: job.status,
    stored_at: formatUtcSeconds(),
    attestations: job.attestations.map(documentAttestation),
  };
  // Compact JSON like JSON.stringify's, which cannot write a bigint height.
  return Buffer.from(dumpCompact(document), "utf8");
}

/**
 * The bytes the document of `job` takes in the store: what `POST /anchors` charges to the
 * principal's quota (issue 34, finding 2). The document carries the proof in base64 and each
 * attestation decoded (an unknown attestation's payload in hex), so it is up to about 3.5
 * times the proof's own bytes; charging the proof alone let a key store 3.5 times its quota.
 */
export function anchorDocumentBytes(job: AnchorJob): number {
  return documentBytes(job, job.note).length;
}

function proofBytes(proof: string): number {
  return Buffer.byteLength(proof, "base64");
}

interface StoredSummary {
  proof: string;
  note: string | null;
  status: string;
  attestations: number;
}

/**
 * The parts of a stored document the decision needs. Documents are written only by this
 * processor, atomically; one that still cannot be read counts as holding nothing, so any
 * valid proof replaces it.
 */
function summarise(stored: Uint8Array): StoredSummary {
  try {
    const document = JSON.parse(Buffer.from(stored).toString("utf8")) as Partial<AnchorDocument>;
    if (typeof document.proof === "string" && Array.isArray(document.attestations)) {
      return {
        proof: document.proof,
        note: typeof document.note === "string" ? document.note : null,
        status: String(document.status),
        attestations: document.attestations.length,
      };
    }
  } catch {}
  return { proof: "", note: null, status: "invalid", attestations: -1 };
}

async function storeAnchor(store: DocumentStore, job: AnchorJob): Promise<AnchorStored> {
  const answer = (outcome: AnchorOutcome, status: string, proof: string): AnchorStored => ({
    outcome,
    digest: job.digest,
    status,
    bytes: proofBytes(proof),
  });
  const { created, stored } = await store.create(
    COLLECTION,
    job.digest,
    documentBytes(job, job.note),
  );
  if (created) return answer("created", job.status, job.proof);
  let current = stored;
  for (;;) {
    const summary = summarise(current);
    if (summary.proof === job.proof) return answer("unchanged", summary.status, summary.proof);
    if (job.attestations.length <= summary.attestations) {
      return answer("kept", summary.status, summary.proof);
    }
    // An upgrade posted without a note keeps the note the digest was first stored with.
    const next = documentBytes(job, job.note ?? summary.note);
    if (await store.replace(COLLECTION, job.digest, current, next)) {
      return answer("replaced", job.status, job.proof);
    }
    const latest = await store.get(COLLECTION, job.digest);
    if (latest === null) throw new Error("a stored anchor vanished during an upgrade");
    current = latest;
  }
}

export function anchorsProcessor(store: DocumentStore): JobProcessor<AnchorJob, AnchorStored> {
  return (job) => storeAnchor(store, job);
}

export type AnchorsQueue = JobQueue<AnchorJob, AnchorStored>;
