/**
 * The one place that picks the document store for a configuration, so the CLI and the server
 * act on the same documents: PostgreSQL when `databaseUrl` is set (distributed mode), else
 * files under `dataDir` (embedded mode).
 */
import type { BreakerLog } from "../io/circuit-breaker.js";
import type { DocumentStore } from "./document-store.js";
import { FsDocumentStore } from "./fs-document-store.js";

export interface DocumentStoreConfig {
  dataDir: string;
  /** `DATABASE_URL`; null or absent: the embedded file store. */
  databaseUrl?: string | null;
  /** PostgreSQL schema of the tables (default `receiptd`); lets deployments share a database. */
  databaseSchema?: string;
  /** Embedded mode: the free space under which the store reports `low_space`. */
  storage?: { minFreeBytes: number };
}

/**
 * Connects and runs migrations first in distributed mode, hence async. `log` hears the
 * database breaker open and close (distributed mode only).
 */
export async function openDocumentStore(
  config: DocumentStoreConfig,
  options: { log?: BreakerLog } = {},
): Promise<DocumentStore> {
  if (config.databaseUrl) {
    // Imported here so that an embedded instance never loads the PostgreSQL client.
    const { DEFAULT_SCHEMA, PgDocumentStore } = await import("./pg-document-store.js");
    return PgDocumentStore.open({
      url: config.databaseUrl,
      schema: config.databaseSchema ?? DEFAULT_SCHEMA,
      log: options.log,
    });
  }
  return new FsDocumentStore(config.dataDir, { minFreeBytes: config.storage?.minFreeBytes });
}
