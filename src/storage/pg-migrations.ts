/**
 * Schema migrations of the PostgreSQL document store. Every web and worker process runs them
 * at start, often several at once, so the whole run is one transaction under an advisory lock
 * taken per schema: the first process applies what is missing, the others wait, then find
 * every version recorded and apply nothing. PostgreSQL DDL is transactional, so a run that
 * fails (or loses its connection) leaves the schema exactly as it was.
 *
 * Migrations are append-only: a released migration is never edited or renumbered; a change is
 * a new, higher version.
 */
import type { Pool, PoolClient } from "pg";

export interface Migration {
  version: number;
  name: string;
  /** SQL for the schema whose quoted identifier is given. */
  sql(schema: string): string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "create_documents",
    // One table for every collection: collections are a fixed handful, and one primary key
    // (collection, id) is the unique business key that makes each write idempotent. `id` uses
    // the "C" collation, which compares UTF-8 bytes, and UTF-8 byte order is code point order:
    // `list` sorts like the file store, and the primary key index serves its prefix LIKE.
    sql: (schema) => `
      CREATE TABLE ${schema}.documents (
        collection text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        body bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (collection, id)
      )`,
  },
];

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The schema's identifier, double-quoted for SQL. Only plain lowercase names are accepted, so
 * the name cannot inject SQL and means the same quoted or not.
 */
export function quoteSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new RangeError(
      `schema name must match ${SCHEMA_NAME.source} (lowercase letters, digits, underscore)`,
    );
  }
  return `"${schema}"`;
}

/** The versions this run applied (empty when the schema was already current). */
export async function runMigrations(
  pool: Pool,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  const quoted = quoteSchema(schema);
  const client: PoolClient = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query("BEGIN");
    // Held until COMMIT/ROLLBACK, and released by the server if this connection dies.
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
      `receiptd.migrations:${schema}`,
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${quoted}.schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
    );
    const recorded = await client.query<{ version: number }>(
      `SELECT version FROM ${quoted}.schema_migrations`,
    );
    const done = new Set(recorded.rows.map((row) => row.version));
    const applied: number[] = [];
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql(quoted));
      await client.query(
        `INSERT INTO ${quoted}.schema_migrations (version, name) VALUES ($1, $2)`,
        [migration.version, migration.name],
      );
      applied.push(migration.version);
    }
    await client.query("COMMIT");
    return applied;
  } catch (error) {
    failure = error instanceof Error ? error : new Error(String(error));
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    // A connection that failed mid-transaction is discarded rather than reused.
    client.release(failure);
  }
}
