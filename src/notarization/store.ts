/**
 * Where notarizations live: the shared `DocumentStore`, collection `notarizations`, one
 * document per statement digest (`sha256:<lower-case hex>`), files under `DATA_DIR` in
 * embedded mode and PostgreSQL rows in distributed mode.
 *
 * Writes are idempotent by content: the id is the digest of the signed bytes, so a second
 * write of the same statement stores nothing and reads back the first document. A second
 * `POST /notarize` of the same request is not the same statement (a later `issued_at`), so it
 * is stored beside the first under its own digest.
 */
import type { CollectionName, CreateResult, DocumentStore } from "../storage/document-store.js";
import { NotarizationError } from "./errors.js";
import { normalizeDigest } from "./request.js";
import { type IssuedNotarization, notarizationDocument } from "./statement.js";

export const NOTARIZATIONS: CollectionName = "notarizations";

/** Stores the document of `issued` under its digest, unless one is already there. */
export function storeNotarization(
  store: DocumentStore,
  issued: IssuedNotarization,
  service: string,
  storedAt: Date = new Date(),
): Promise<CreateResult> {
  return store.create(
    NOTARIZATIONS,
    issued.digest,
    notarizationDocument(issued, service, storedAt),
  );
}

/**
 * The document id of a digest as a reader writes it (`/notarize/<hex>`, or `sha256:<hex>`;
 * either case). Throws `invalid_digest` for anything else, before the store is read.
 */
export function notarizationId(digest: string): string {
  const id = normalizeDigest(digest);
  if (id === null) {
    throw new NotarizationError("invalid_digest", "the digest must be 64 hex digits", {
      field: "digest",
    });
  }
  return id;
}

/** The stored document's bytes; throws `invalid_digest` or `notarization_not_found`. */
export async function readNotarization(store: DocumentStore, digest: string): Promise<Uint8Array> {
  const id = notarizationId(digest);
  const bytes = await store.get(NOTARIZATIONS, id);
  if (bytes === null) {
    throw new NotarizationError("notarization_not_found", `no notarization is stored as ${id}`);
  }
  return bytes;
}
