/**
 * The one place that picks the document store for a configuration, so the CLI and the server
 * act on the same documents. Embedded mode (files under `DATA_DIR`) is the only store so far;
 * the PostgreSQL store (`DATABASE_URL`) will be chosen here.
 */
import type { DocumentStore } from "./document-store.js";
import { FsDocumentStore } from "./fs-document-store.js";

/** Async although the file store needs no setup: a database store may want to connect first. */
export async function openDocumentStore(config: { dataDir: string }): Promise<DocumentStore> {
  return new FsDocumentStore(config.dataDir);
}
