/**
 * Durable documents (architecture.md): anchors, revocation documents, settlement receipts,
 * crystals, API keys, notarizations. Each lives in a collection under an id, as the exact bytes that are
 * served back, so ETags derived from them are stable. Embedded mode keeps them in files
 * (`FsDocumentStore`); distributed mode in PostgreSQL. Routes and processors see only this
 * interface.
 */
import { codedErrorClass } from "../verifier/coded-error.js";

/** Collection names are fixed by the code, never taken from a request. */
export type CollectionName =
  | "anchors"
  | "revocations"
  | "settlements"
  | "crystals"
  | "tenants"
  | "keys"
  | "notarizations";

export interface CreateResult {
  /** True when this call stored the document; false when one was already there. */
  created: boolean;
  /** The stored bytes afterwards: `bytes` when created, else the existing document. */
  stored: Uint8Array;
}

export interface DocumentStore {
  /** The document's bytes, or null when there is none. */
  get(collection: CollectionName, id: string): Promise<Uint8Array | null>;
  /**
   * Stores `bytes` under `id` unless a document is already there (the idempotent write of
   * every business key: anchor digest, settlement tx, crystal id, key hash, notarization
   * digest). Resolves only once the write is durable.
   */
  create(collection: CollectionName, id: string, bytes: Uint8Array): Promise<CreateResult>;
  /**
   * Compare-and-set: replaces the document only if its current bytes equal `expected`
   * (`null`: only if absent). Resolves true once the new bytes are durable, false (writing
   * nothing) when the document had changed.
   */
  replace(
    collection: CollectionName,
    id: string,
    expected: Uint8Array | null,
    bytes: Uint8Array,
  ): Promise<boolean>;
  /**
   * Removes the document. Resolves true once the removal is durable, false when there was
   * none. Only expiry removes documents (crystals past `CRYSTAL_TTL_DAYS`); every other
   * document is kept for good.
   */
  delete(collection: CollectionName, id: string): Promise<boolean>;
  /** The collection's ids that start with `prefix` (default: all), sorted by code point. */
  list(collection: CollectionName, prefix?: string): Promise<string[]>;
  /**
   * The space left for documents (the embedded file store; a database reports its own
   * health elsewhere, so PostgreSQL has none).
   */
  space?(): Promise<StoreSpace>;
  close(): Promise<void>;
}

/**
 * `full`: writes are refused for lack of space (503 store codes, `/health` degraded);
 * `low_space`: writes still succeed, but free space is under the configured minimum.
 */
export interface StoreSpace {
  state: "ok" | "low_space" | "full";
  freeBytes: number;
  minFreeBytes: number;
}

export type DocumentStoreUnavailableErrorCode = "store_unavailable";
/** The store could not be reached or could not write: the caller answers 503, nothing is lost. */
export class DocumentStoreUnavailableError extends codedErrorClass<DocumentStoreUnavailableErrorCode>(
  "store_unavailable",
) {
  override readonly name = "DocumentStoreUnavailableError";
}
