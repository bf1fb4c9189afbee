/**
 * The durable log behind an embedded in-memory store (the cap counters, the spent-challenge
 * ledger): embedded mode keeps them in process memory for speed, and this file is what makes
 * them survive a kill -9 and a restart (issue 24), as Redis does in distributed mode.
 *
 * One file per store, one JSON array per line. `append` resolves once its line is on disk
 * (one write to a file opened with O_DSYNC: what write + fdatasync give, in one call from the
 * main thread instead of two); appends that arrive while a sync is under way share the next one (group
 * commit), so a burst of requests costs one sync, not one each. A crash can cut only the last
 * line, which `open` drops. The log is compacted into its owner's snapshot at open and after
 * `compactAfter` appended lines, with `replaceFile` (temporary file, fsync, rename), so a
 * crash during compaction leaves the old log or the new one.
 */
import { constants } from "node:fs";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import { readIfPresent, replaceFile, syncDirectory } from "./atomic-file.js";

export type JournalRecord = (string | number)[];

export interface StateJournalOptions {
  /** Lines appended after which the log is rewritten as the owner's snapshot (default 100,000). */
  compactAfter?: number;
}

const DEFAULT_COMPACT_AFTER = 100_000;

/**
 * `"a"` with O_DSYNC: each write is on disk (data, and the size that reaches it) when it
 * returns, so a group commit is one call on the thread pool rather than a write and a
 * `datasync` (issue 33: two file-system calls per sync on the main thread).
 */
const APPEND_DURABLY =
  constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_DSYNC;

function encode(records: readonly JournalRecord[]): string {
  let text = "";
  for (const record of records) text += `${JSON.stringify(record)}\n`;
  return text;
}

/** The complete lines of `bytes` that parse as arrays; a cut or foreign line is skipped. */
function decode(bytes: Buffer): JournalRecord[] {
  const records: JournalRecord[] = [];
  const text = bytes.toString("utf8");
  const end = text.lastIndexOf("\n");
  for (const line of text.slice(0, end + 1).split("\n")) {
    if (line === "") continue;
    try {
      const record: unknown = JSON.parse(line);
      if (Array.isArray(record)) records.push(record as JournalRecord);
    } catch {
      // A damaged line loses one entry, not the store.
    }
  }
  return records;
}

/** The appends waiting for one sync, and how to tell them it is done. */
interface Batch {
  written: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const written = new Promise<void>((done, fail) => {
    resolve = done;
    reject = fail;
  });
  // Every append's caller awaits it; this keeps a failure with no caller left from being
  // reported as unhandled.
  written.catch(() => {});
  return { written, resolve, reject };
}

export class StateJournal {
  readonly path: string;
  readonly #compactAfter: number;
  readonly #snapshot: () => JournalRecord[];
  #handle: FileHandle | null = null;
  #pending: string[] = [];
  /**
   * The promise every append of `#pending` shares: one per sync, not one per append, so a
   * request's count costs a string and a reference (issue 33, the main thread's per-request
   * cost), and a burst of them one promise.
   */
  #batch: Batch | null = null;
  #flushing: Promise<void> | null = null;
  #appended = 0;
  #closed = false;

  private constructor(path: string, snapshot: () => JournalRecord[], options: StateJournalOptions) {
    this.path = path;
    this.#snapshot = snapshot;
    this.#compactAfter = options.compactAfter ?? DEFAULT_COMPACT_AFTER;
  }

  /**
   * Reads the log at `path`, hands its records to `restore` (which rebuilds the owner's
   * memory), then compacts it into `snapshot()` and opens it for appending.
   */
  static async open(
    path: string,
    restore: (records: JournalRecord[]) => void,
    snapshot: () => JournalRecord[],
    options: StateJournalOptions = {},
  ): Promise<StateJournal> {
    const directory = dirname(path);
    const created = await mkdir(directory, { recursive: true, mode: 0o700 });
    if (created !== undefined) await syncDirectory(dirname(directory));
    const bytes = await readIfPresent(path);
    if (bytes !== null) restore(decode(bytes));
    const journal = new StateJournal(path, snapshot, options);
    await journal.#compact();
    return journal;
  }

  /** Resolves once `record` is on disk (with the other appends of its sync). */
  append(record: JournalRecord): Promise<void> {
    if (this.#closed) return Promise.reject(new Error(`state journal ${this.path} is closed`));
    this.#pending.push(JSON.stringify(record));
    this.#batch ??= newBatch();
    this.#flushing ??= this.#flush();
    return this.#batch.written;
  }

  async #flush(): Promise<void> {
    // Lets the appends of the same tick join this sync.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.#pending.length > 0) {
      const lines = this.#pending;
      const batch = this.#batch;
      this.#pending = [];
      this.#batch = null;
      try {
        const handle = this.#handle;
        if (handle === null) throw new Error(`state journal ${this.path} is not open`);
        // O_DSYNC: the write returns once the lines are on disk, as a datasync would.
        await handle.write(`${lines.join("\n")}\n`);
        this.#appended += lines.length;
        if (this.#appended >= this.#compactAfter) await this.#compact();
        batch?.resolve();
      } catch (error) {
        batch?.reject(error);
      }
    }
    this.#flushing = null;
  }

  async #compact(): Promise<void> {
    await replaceFile(this.path, encode(this.#snapshot()));
    await this.#handle?.close();
    this.#handle = await open(this.path, APPEND_DURABLY, 0o600);
    this.#appended = 0;
  }

  /** Waits for the appends under way, then closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#flushing;
    await this.#handle?.close();
    this.#handle = null;
  }
}
