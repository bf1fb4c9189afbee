/**
 * The audit trail (service.md §9): one content-free JSON line per request, appended to
 * `<auditDir>/<YYYY-MM-DD>.jsonl`, one file per UTC day. Billing is metered from these lines
 * (`billing.ts`), so the format is stable:
 *
 *   {"time":"2026-11-21T10:00:00Z","principal":"key:0123456789ab","method":"POST",
 *    "route":"/verify","status":200,"bytes":512,"latency_ms":3}
 *
 * A refusal charged for the work it reports (`task_hash_unbound`, `result_too_large`: issue
 * 22) ends with `"charged":true`, and an answer given again for an `Idempotency-Key` (issue
 * 28), never charged whatever its status, with `"replayed":true`: the members a line may
 * lack; billing reads them.
 *
 * A line holds the principal (key id, `x402:<payer>` or `anonymous`), the route *template*
 * and numbers, never a body, query string, bundle field, header or address of the client.
 *
 * Lines are buffered and written at least every `flushIntervalMs`, each batch of whole lines
 * with one `write` on a file opened for appending. O_APPEND makes each write land at the end
 * of the file as one piece, so several processes (web instances on one data directory) can
 * share a day's file without their lines interleaving.
 *
 * With `retentionDays` set, the log also keeps its directory (issue 37, audit-files.ts): at
 * `startHousekeeping()` and every hour after, it compresses closed days and removes the days
 * past the retention, then measures the directory. `bytes` is that measurement plus what this
 * process appended since, so `/metrics` reads a number rather than walking the directory.
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Env } from "../io/env.js";
import { formatUtcSeconds } from "../verifier/timestamps.js";
import {
  AUDIT_PLAIN_SUFFIX,
  type AuditCompaction,
  auditDirectoryBytes,
  compactAuditDir,
} from "./audit-files.js";
import { isPrincipal, type Principal } from "./principal.js";

export const AUDIT_FILE_SUFFIX = AUDIT_PLAIN_SUFFIX;
const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;
const DEFAULT_FLUSH_INTERVAL_MS = 1000;
/** A larger buffer is written at once rather than waiting for the interval. */
const DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024;
/** Batches are cut at whole lines below this size, well under what one write appends whole. */
const MAX_WRITE_BYTES = 64 * 1024;
/**
 * How often a web process compacts its audit directory: a day is closed an hour after its
 * midnight (CLOSED_DAY_GRACE_MS), so it is compressed within two hours of its end; a run that
 * finds nothing to do is one listing and a stat per file.
 */
export const AUDIT_HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;

/** What the request hooks know about a finished request. */
export interface AuditEvent {
  principal: Principal;
  method: string;
  /** The route template (`/anchors/:digest`), never the request URL. */
  route: string;
  status: number;
  /** Response body bytes sent. */
  bytes: number;
  latencyMs: number;
  /** A refusal charged like a result (it reports work done). */
  chargedRefusal?: boolean;
  /**
   * A 2xx that carries no work done (an MCP reply of tool errors only, issue 37): never
   * charged, and its line says `"charged":false`.
   */
  unchargedResult?: boolean;
  /** An answer given again to a retry with the same `Idempotency-Key`: never charged. */
  replayed?: boolean;
  /** When the response finished; default: the log's clock. */
  timeMs?: number;
}

/** One parsed audit line. */
export interface AuditLine {
  time: string;
  principal: Principal;
  method: string;
  route: string;
  status: number;
  bytes: number;
  latencyMs: number;
  /** `"charged":true`: a refusal charged like a result. */
  chargedRefusal: boolean;
  /** `"charged":false`: a 2xx that carries no work done, never charged. */
  unchargedResult: boolean;
  /** `"replayed":true`: an `Idempotency-Key` replay, never charged. */
  replayed: boolean;
}

/** `AUDIT_DIR`, else `<dataDir>/audit` (the server and the billing CLI agree on it). */
export function auditDirFrom(env: Env, dataDir: string): string {
  const configured = env.AUDIT_DIR;
  return configured ? resolve(configured) : join(dataDir, "audit");
}

/** The UTC day of an instant as `YYYY-MM-DD`: the name of its audit file, without suffix. */
export function auditDay(timeMs: number): string {
  return new Date(timeMs).toISOString().slice(0, 10);
}

/** A route template cannot carry a query, but a mistaken caller must not leak one either. */
function routeTemplate(route: string): string {
  const path = route.split(/[?#]/, 1)[0] ?? "";
  return path.startsWith("/") ? path : "(unmatched)";
}

function wholeNumber(value: number): number {
  return Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/**
 * The time member of the last line formatted, by whole second: every line of a busy second
 * shares it, so a request does not format a date (issue 33, the main thread's per-request cost).
 */
let lastSecond = Number.NaN;
let lastTime = "";

function auditTime(timeMs: number): string {
  const second = Math.floor(timeMs / 1000);
  if (second !== lastSecond) {
    lastTime = formatUtcSeconds(new Date(second * 1000));
    lastSecond = second;
  }
  return lastTime;
}

/**
 * The line for `event` (with its newline), members in the documented order. Written out
 * member by member, which is what `JSON.stringify` of the same object gives, without building
 * the object first.
 */
export function formatAuditLine(event: AuditEvent, timeMs: number): string {
  if (!isPrincipal(event.principal)) throw new RangeError("not a principal");
  const method = /^[A-Z]{1,16}$/.test(event.method) ? event.method : "OTHER";
  const status = Number.isInteger(event.status) ? event.status : 0;
  let line = `{"time":${JSON.stringify(auditTime(timeMs))},"principal":${JSON.stringify(event.principal)},"method":"${method}","route":${JSON.stringify(routeTemplate(event.route))},"status":${status},"bytes":${wholeNumber(event.bytes)},"latency_ms":${wholeNumber(event.latencyMs)}`;
  // Were both set, the object's later `charged` member (false) would win.
  if (event.unchargedResult === true) line += ',"charged":false';
  else if (event.chargedRefusal === true) line += ',"charged":true';
  if (event.replayed === true) line += ',"replayed":true';
  return `${line}}\n`;
}

/** A line as written by `formatAuditLine`, or null for anything else (a torn or foreign line). */
export function parseAuditLine(text: string): AuditLine | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const line = value as Record<string, unknown>;
  const { time, principal, method, route, status, bytes, latency_ms: latencyMs, charged } = line;
  const { replayed } = line;
  if (
    typeof time !== "string" ||
    typeof principal !== "string" ||
    !isPrincipal(principal) ||
    typeof method !== "string" ||
    typeof route !== "string" ||
    !Number.isInteger(status) ||
    !Number.isInteger(bytes) ||
    !Number.isInteger(latencyMs) ||
    (charged !== undefined && typeof charged !== "boolean") ||
    (replayed !== undefined && replayed !== true)
  ) {
    return null;
  }
  return {
    time,
    principal,
    method,
    route,
    status: status as number,
    bytes: bytes as number,
    latencyMs: latencyMs as number,
    chargedRefusal: charged === true,
    unchargedResult: charged === false,
    replayed: replayed === true,
  };
}

export interface AuditLogOptions {
  now?: () => number;
  /** Longest a line waits in memory before it is written. */
  flushIntervalMs?: number;
  maxBufferedBytes?: number;
  /** Told about a batch that could not be written (the lines are lost). Default: stderr. */
  onError?: (error: unknown, lostLines: number) => void;
  /** `AUDIT_RETENTION_DAYS` (0: keep every day); without it the log never compacts. */
  retentionDays?: number;
  /** Told what each compaction did. */
  onCompaction?: (report: AuditCompaction) => void;
  /** Told about a compaction that failed (it is tried again at the next interval). */
  onCompactionError?: (error: unknown) => void;
}

function reportToStderr(error: unknown, lostLines: number): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`audit: ${lostLines} line(s) could not be written: ${message}\n`);
}

function reportCompactionErrorToStderr(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`audit: compaction failed: ${message}\n`);
}

/** Appends audit lines to the day files of one directory. */
export class AuditLog {
  readonly #directory: string;
  readonly #now: () => number;
  readonly #flushIntervalMs: number;
  readonly #maxBufferedBytes: number;
  readonly #onError: (error: unknown, lostLines: number) => void;
  /** Day → lines waiting to be written to that day's file. */
  #pending = new Map<string, string[]>();
  #pendingBytes = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Tail of the chain of writes: batches go out one after another, in order. */
  #writing: Promise<void> = Promise.resolve();
  #open: { day: string; handle: FileHandle } | null = null;
  #directoryReady: Promise<unknown> | null = null;
  #closed = false;
  readonly #retentionDays: number | null;
  readonly #onCompaction: (report: AuditCompaction) => void;
  readonly #onCompactionError: (error: unknown) => void;
  #housekeepingTimer: NodeJS.Timeout | null = null;
  /** The compaction running, if any: one at a time per process. */
  #compaction: Promise<AuditCompaction> | null = null;
  /** The directory's bytes at the last measurement, and what this log appended since. */
  #measuredBytes = 0;
  #appendedBytes = 0;

  constructor(directory: string, options: AuditLogOptions = {}) {
    this.#directory = directory;
    this.#now = options.now ?? Date.now;
    this.#flushIntervalMs = options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.#onError = options.onError ?? reportToStderr;
    this.#retentionDays = options.retentionDays ?? null;
    this.#onCompaction = options.onCompaction ?? (() => {});
    this.#onCompactionError = options.onCompactionError ?? reportCompactionErrorToStderr;
  }

  get directory(): string {
    return this.#directory;
  }

  /**
   * Bytes of the audit directory: measured at each compaction, plus the lines this process
   * wrote since (other processes sharing the directory are seen at the next measurement).
   */
  get bytes(): number {
    return this.#measuredBytes + this.#appendedBytes;
  }

  /**
   * Measures the directory, then compacts it in the background now and every `intervalMs`
   * until `close()`. A first run over many uncompressed days takes minutes, so nothing waits
   * for it; a failed run is reported (`onCompactionError`) and tried again at the next one.
   */
  async startHousekeeping(intervalMs = AUDIT_HOUSEKEEPING_INTERVAL_MS): Promise<void> {
    if (this.#retentionDays === null || this.#closed || this.#housekeepingTimer !== null) return;
    try {
      this.#measuredBytes = await auditDirectoryBytes(this.#directory);
      this.#appendedBytes = 0;
    } catch (error) {
      this.#onCompactionError(error);
    }
    const run = () => {
      this.compact().catch((error: unknown) => this.#onCompactionError(error));
    };
    this.#housekeepingTimer = setInterval(run, intervalMs);
    this.#housekeepingTimer.unref();
    run();
  }

  /** Compresses closed days and removes those past the retention (audit-files.ts), once. */
  compact(): Promise<AuditCompaction> {
    if (this.#compaction !== null) return this.#compaction;
    const compaction = compactAuditDir(this.#directory, {
      retentionDays: this.#retentionDays ?? 0,
      nowMs: this.#now(),
    }).then(
      (report) => {
        // Lines appended during the run may be counted twice until the next measurement: a
        // second's worth, against a directory of days.
        this.#measuredBytes = report.bytes;
        this.#appendedBytes = 0;
        this.#compaction = null;
        this.#onCompaction(report);
        return report;
      },
      (error: unknown) => {
        this.#compaction = null;
        throw error;
      },
    );
    this.#compaction = compaction;
    return compaction;
  }

  /** Queues the line of one finished request. Never throws for I/O; see `onError`. */
  record(event: AuditEvent): void {
    const timeMs = event.timeMs ?? this.#now();
    const line = formatAuditLine(event, timeMs);
    // The day of the line's own time member (`auditDay`'s, without formatting a date again).
    const day = auditTime(timeMs).slice(0, 10);
    if (this.#closed) {
      // Late responses of a closing server: rare enough to write one by one, synchronously.
      this.#appendNow(day, line);
      return;
    }
    const lines = this.#pending.get(day);
    if (lines === undefined) this.#pending.set(day, [line]);
    else lines.push(line);
    this.#pendingBytes += Buffer.byteLength(line);
    if (this.#pendingBytes >= this.#maxBufferedBytes) void this.flush();
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => void this.flush(), this.#flushIntervalMs);
      this.#timer.unref();
    }
  }

  /** Writes every queued line; resolves once they are in their files. */
  flush(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const batch = this.#pending;
    this.#pending = new Map();
    this.#pendingBytes = 0;
    this.#writing = this.#writing.then(() => this.#write(batch));
    return this.#writing;
  }

  /** Flushes and closes the open file. Lines recorded later are appended synchronously. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#housekeepingTimer !== null) {
      clearInterval(this.#housekeepingTimer);
      this.#housekeepingTimer = null;
    }
    // A compaction in progress finishes (its temporary file would otherwise stay behind).
    await this.#compaction?.catch(() => undefined);
    await this.flush();
    if (this.#open !== null) {
      await this.#open.handle.close();
      this.#open = null;
    }
  }

  async #write(batch: Map<string, string[]>): Promise<void> {
    for (const [day, lines] of [...batch].sort(([a], [b]) => (a < b ? -1 : 1))) {
      try {
        const { handle, keep } = await this.#handleFor(day);
        try {
          for (const chunk of chunks(lines)) {
            await writeAll(handle, chunk);
            this.#appendedBytes += chunk.length;
          }
        } finally {
          if (!keep) await handle.close();
        }
      } catch (error) {
        this.#onError(error, lines.length);
      }
    }
  }

  /** The day's file; the newest day's stays open, an older one is closed after use (`keep`). */
  async #handleFor(day: string): Promise<{ handle: FileHandle; keep: boolean }> {
    if (this.#open?.day === day) return { handle: this.#open.handle, keep: true };
    this.#directoryReady ??= mkdir(this.#directory, {
      recursive: true,
      mode: DIRECTORY_MODE,
    }).catch((error: unknown) => {
      this.#directoryReady = null;
      throw error;
    });
    await this.#directoryReady;
    const handle = await open(this.#path(day), "a", FILE_MODE);
    if (this.#open !== null && this.#open.day > day) return { handle, keep: false };
    const previous = this.#open;
    this.#open = { day, handle };
    await previous?.handle.close();
    return { handle, keep: true };
  }

  #appendNow(day: string, line: string): void {
    try {
      mkdirSync(this.#directory, { recursive: true, mode: DIRECTORY_MODE });
      appendFileSync(this.#path(day), line, { mode: FILE_MODE });
      this.#appendedBytes += Buffer.byteLength(line);
    } catch (error) {
      this.#onError(error, 1);
    }
  }

  #path(day: string): string {
    return join(this.#directory, `${day}${AUDIT_FILE_SUFFIX}`);
  }
}

/** Whole lines grouped into buffers of at most `MAX_WRITE_BYTES` (or one longer line). */
function* chunks(lines: string[]): Generator<Buffer> {
  let group: string[] = [];
  let size = 0;
  for (const line of lines) {
    const length = Buffer.byteLength(line);
    if (group.length > 0 && size + length > MAX_WRITE_BYTES) {
      yield Buffer.from(group.join(""));
      group = [];
      size = 0;
    }
    group.push(line);
    size += length;
  }
  if (group.length > 0) yield Buffer.from(group.join(""));
}

async function writeAll(handle: FileHandle, buffer: Buffer): Promise<void> {
  let offset = 0;
  // A regular file takes the whole buffer in one write; the loop only covers a short write
  // (a full disk), where nothing better than finishing the line is possible.
  while (offset < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset);
    offset += bytesWritten;
  }
}
