/**
 * The distributed `DocumentStore`: documents in PostgreSQL (`DATABASE_URL`), one row per
 * (collection, id) in `<schema>.documents`, shared by every web and worker process.
 *
 * Every write is a single statement, so it is atomic: it either committed whole or not at
 * all. The primary key is the business key, so `create` is idempotent across processes and
 * `replace` is a compare-and-set on the exact stored bytes. When the database cannot be
 * reached (refused, cut, shutting down, timed out) the call rejects with
 * `DocumentStoreUnavailableError`, which the service answers with 503. A write whose
 * connection was cut after the server received it may still have committed; retrying it is
 * safe, since `create` then returns the stored bytes and `replace` reports the changed
 * document.
 *
 * A circuit breaker (src/io/circuit-breaker.ts, issue 34, finding 4) sits in front of every
 * statement: once one is not answered in time (a read or connect timeout), later
 * calls fail at once with `DocumentStoreUnavailableError`, having sent nothing, while a
 * background `SELECT 1` on a connection of its own checks for recovery. Without it every
 * request paid the client-side timeout again for as long as the database stalled.
 */
import pg from "pg";
import {
  type BreakerLog,
  type BreakerTiming,
  CircuitBreaker,
  type CircuitState,
} from "../io/circuit-breaker.js";
import { activeTracing } from "../tracing/tracing.js";
import {
  type CollectionName,
  type CreateResult,
  type DocumentStore,
  DocumentStoreUnavailableError,
} from "./document-store.js";
import { quoteSchema, runMigrations } from "./pg-migrations.js";

export interface PgDocumentStoreOptions {
  /** A `postgres://` connection URL. */
  url: string;
  /** Schema holding the tables, created if missing (default `receiptd`). */
  schema?: string;
  /** Connections per process (default 10). */
  maxConnections?: number;
  /** How long to wait for a connection, new or pooled (default 5 s). */
  connectionTimeoutMillis?: number;
  /** Server-side limit on one statement (default 10 s). */
  statementTimeoutMillis?: number;
  /**
   * Client-side limit on waiting for a reply (default: statement timeout + 2 s), for a
   * database that has gone silent without closing the connection.
   */
  queryTimeoutMillis?: number;
  /** Where the breaker says it opened and closed (default: nowhere). */
  log?: BreakerLog;
  /** The breaker's probe intervals (tests shorten them). */
  breaker?: Omit<BreakerTiming, "log">;
}

export const DEFAULT_SCHEMA = "receiptd";

/** UTF-8 bytes of an id; the primary key index caps entries at about 2.7 kB. */
const MAX_ID_BYTES = 1024;

/**
 * SQLSTATE codes and classes that mean the database cannot serve the request right now,
 * rather than that the request is wrong.
 */
const UNAVAILABLE_SQLSTATE_CLASSES = ["08", "53", "58"];
const UNAVAILABLE_SQLSTATES = new Set([
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, recovering)
  "57P05", // idle_session_timeout
  "57014", // query_canceled: the statement timeout
  "55P03", // lock_not_available
  "25006", // read_only_sql_transaction: a standby after a failover
  "40001", // serialization_failure
  "40P01", // deadlock_detected
]);

/** Socket errors of a connection that cannot be made or has been lost. */
const UNAVAILABLE_SYSTEM_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** pg's own errors (no code) for lost connections, timeouts and an ended pool. */
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /^Query read timeout$/,
  /is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
  /^The server does not support SSL connections$/,
];

export function isUnavailableError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof DocumentStoreUnavailableError) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SYSTEM_CODES.has(code)) return true;
    if (code.length === 5 && UNAVAILABLE_SQLSTATE_CLASSES.includes(code.slice(0, 2))) return true;
  }
  if (error instanceof AggregateError) return error.errors.some(isUnavailableError);
  if (UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(error.message))) return true;
  return error.cause !== undefined && isUnavailableError(error.cause);
}

/** pg's own errors for an answer (or a connection) that did not come in time. */
const TIMED_OUT_MESSAGES = [
  /^timeout exceeded when trying to connect$/,
  /^Connection terminated due to connection timeout$/,
  /^Query read timeout$/,
];

/**
 * What opens the breaker: the database did not answer in time (a read or connect timeout,
 * ETIMEDOUT). Only waiting is worth remembering: a refused or dropped connection
 * (ECONNREFUSED, "Connection terminated") already fails in milliseconds on its own and is
 * noticed as soon as the database is back, where an open breaker would keep refusing until
 * its probe. A statement timeout (57014), a lock or serialization failure, a read-only
 * standby are answers, not silence.
 */
export function isUnansweredQuery(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // Our own refusal while open, or an outage already translated, says nothing new.
  if (error instanceof DocumentStoreUnavailableError) return false;
  if ((error as { code?: unknown }).code === "ETIMEDOUT") return true;
  if (error instanceof AggregateError) return error.errors.some(isUnansweredQuery);
  if (TIMED_OUT_MESSAGES.some((pattern) => pattern.test(error.message))) return true;
  return error.cause !== undefined && isUnansweredQuery(error.cause);
}

/** The database breaker's policy: its refusal is the store's usual "unavailable" error. */
function databaseBreaker(timing: BreakerTiming): CircuitBreaker {
  return new CircuitBreaker(
    {
      isUnanswered: isUnansweredQuery,
      openError: (retryInMs) =>
        new DocumentStoreUnavailableError(
          `document database did not answer recently; not sent (next check in ${Math.ceil(retryInMs)} ms)`,
        ),
      // No other log reports a database outage, so every opening is said, with its cause
      // (an error class or pg's fixed message: never a statement, a value or the URL).
      opened: (error) =>
        `postgres did not answer (${databaseOutageCause(error)}); failing fast until it does`,
      closed: "postgres answers again; statements are sent again",
    },
    timing,
  );
}

function databaseOutageCause(error: unknown): string {
  if (!(error instanceof Error)) return "unknown";
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") return code;
  return TIMED_OUT_MESSAGES.some((pattern) => pattern.test(error.message))
    ? error.message.slice(0, 80)
    : error.name;
}

/** How long the breaker's probe may take to connect and answer `SELECT 1`. */
const PROBE_TIMEOUT_MS = 2_000;

/**
 * One `SELECT 1` on a connection of its own, never a pooled one: the pool's connections may
 * all be held by statements waiting out their timeouts, and a fresh connection also proves
 * that new ones can be made.
 */
async function probeDatabase(url: string): Promise<boolean> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
    application_name: "receiptd-probe",
  });
  // A connection lost after the probe gave up must not crash the process.
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    // Not awaited: on a stalled server the goodbye would wait as long as the stall.
    client.end().catch(() => {});
  }
}

/** Rethrows an outage as `DocumentStoreUnavailableError` (the original as its cause). */
function translate(error: unknown): never {
  if (isUnavailableError(error) && !(error instanceof DocumentStoreUnavailableError)) {
    const message = error instanceof Error ? error.message : String(error);
    throw new DocumentStoreUnavailableError(`document database unavailable: ${message}`, {
      cause: error,
    });
  }
  throw error;
}

/**
 * Ids are opaque text, but PostgreSQL text cannot hold NUL and a lone surrogate has no UTF-8
 * form (it would be stored as U+FFFD and collide with another id), so both are refused, as
 * are empty and oversized ids.
 */
function checkId(id: string): void {
  if (
    id.length === 0 ||
    id.includes("\u0000") ||
    !id.isWellFormed() ||
    Buffer.byteLength(id, "utf8") > MAX_ID_BYTES
  ) {
    throw new RangeError(
      `document id must be 1–${MAX_ID_BYTES} bytes of well-formed text without NUL`,
    );
  }
}

/** `prefix` as a LIKE pattern (escape character `\`) matching every string it starts. */
export function likePrefixPattern(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

/** A view of the same bytes, as pg sends a Buffer parameter as binary, byte for byte. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export class PgDocumentStore implements DocumentStore {
  readonly #pool: pg.Pool;
  readonly #table: string;
  readonly #breaker: CircuitBreaker;
  readonly #schema: string;
  #closed: Promise<void> | undefined;

  private constructor(pool: pg.Pool, schema: string, breaker: CircuitBreaker) {
    this.#pool = pool;
    this.#table = `${quoteSchema(schema)}.documents`;
    this.#breaker = breaker;
    this.#schema = schema;
  }

  /** `open` while the database has not answered recently (`/health` reports it `down`). */
  get circuit(): CircuitState {
    return this.#breaker.state;
  }

  /** Connects, brings the schema up to date (see pg-migrations.ts), and returns the store. */
  static async open(options: PgDocumentStoreOptions): Promise<PgDocumentStore> {
    const schema = options.schema ?? DEFAULT_SCHEMA;
    quoteSchema(schema);
    const statementTimeout = options.statementTimeoutMillis ?? 10_000;
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5_000,
      statement_timeout: statementTimeout,
      query_timeout: options.queryTimeoutMillis ?? statementTimeout + 2_000,
      keepAlive: true,
      application_name: "receiptd",
    });
    // An idle connection that dies (database restart, network cut) is reported here; the pool
    // has already dropped it, and the next query opens a new one or fails as unavailable.
    // Without a listener the error would crash the process.
    pool.on("error", () => {});
    try {
      await runMigrations(pool, schema);
    } catch (error) {
      await pool.end().catch(() => {});
      translate(error);
    }
    const breaker = databaseBreaker({ ...options.breaker, log: options.log });
    breaker.useProbe(() => probeDatabase(options.url));
    return new PgDocumentStore(pool, schema, breaker);
  }

  async #query<Row extends pg.QueryResultRow>(
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<Row>> {
    // Every statement of the store passes here: the one place PostgreSQL client spans are made
    // (issue 36). Off, one comparison. The span names the statement's verb and table, never
    // its values (the ids and bodies).
    const tracing = activeTracing();
    const query = () => this.#pool.query<Row>(text, values);
    try {
      if (tracing === null) return await this.#breaker.run(query);
      const operation = /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? "QUERY";
      return await tracing.inSpan(
        `${operation} documents`,
        "client",
        {
          "db.system.name": "postgresql",
          "db.operation.name": operation,
          "db.collection.name": "documents",
          "db.namespace": this.#schema,
        },
        () => this.#breaker.run(query),
      );
    } catch (error) {
      translate(error);
    }
  }

  async get(collection: CollectionName, id: string): Promise<Uint8Array | null> {
    checkId(id);
    const result = await this.#query<{ body: Buffer }>(
      `SELECT body FROM ${this.#table} WHERE collection = $1 AND id = $2`,
      [collection, id],
    );
    return result.rows[0]?.body ?? null;
  }

  async create(collection: CollectionName, id: string, bytes: Uint8Array): Promise<CreateResult> {
    checkId(id);
    // Two statements, not one: a SELECT inside the INSERT's statement would use a snapshot
    // taken before a concurrent winner committed, and could see no row at all. Only expiry
    // deletes rows (old crystals), so the SELECT after a conflict finds the winner.
    const inserted = await this.#query(
      `INSERT INTO ${this.#table} (collection, id, body) VALUES ($1, $2, $3)
       ON CONFLICT (collection, id) DO NOTHING`,
      [collection, id, asBuffer(bytes)],
    );
    if (inserted.rowCount === 1) return { created: true, stored: bytes };
    const stored = await this.get(collection, id);
    if (stored === null) throw new Error("a document vanished while being created");
    return { created: false, stored };
  }

  async replace(
    collection: CollectionName,
    id: string,
    expected: Uint8Array | null,
    bytes: Uint8Array,
  ): Promise<boolean> {
    checkId(id);
    // Concurrent UPDATEs of one row queue on its lock; each re-checks `body = $3` against the
    // version committed before it, so exactly one replace of a given version succeeds.
    const result =
      expected === null
        ? await this.#query(
            `INSERT INTO ${this.#table} (collection, id, body) VALUES ($1, $2, $3)
             ON CONFLICT (collection, id) DO NOTHING`,
            [collection, id, asBuffer(bytes)],
          )
        : await this.#query(
            `UPDATE ${this.#table} SET body = $4, updated_at = now()
             WHERE collection = $1 AND id = $2 AND body = $3`,
            [collection, id, asBuffer(expected), asBuffer(bytes)],
          );
    return result.rowCount === 1;
  }

  async delete(collection: CollectionName, id: string): Promise<boolean> {
    checkId(id);
    const result = await this.#query(
      `DELETE FROM ${this.#table} WHERE collection = $1 AND id = $2`,
      [collection, id],
    );
    return result.rowCount === 1;
  }

  async list(collection: CollectionName, prefix = ""): Promise<string[]> {
    // `id` has the "C" collation (byte order of UTF-8, which is code point order).
    const result = await this.#query<{ id: string }>(
      `SELECT id FROM ${this.#table} WHERE collection = $1 AND id LIKE $2 ESCAPE '\\'
       ORDER BY id`,
      [collection, likePrefixPattern(prefix)],
    );
    return result.rows.map((row) => row.id);
  }

  /** Waits for queries in flight, then closes every connection. Idempotent. */
  close(): Promise<void> {
    this.#breaker.close();
    this.#closed ??= this.#pool.end();
    return this.#closed;
  }
}
