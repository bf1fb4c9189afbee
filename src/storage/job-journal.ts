/**
 * A file journal of jobs that must survive a crash of this process before anything else holds
 * them (issue 16: a paid answer is released only once its settlement receipt job is durable).
 * One file per job, `<directory>/<job id>.json`, holding the payload as JSON; written with
 * `replaceFile` (temporary file, fsync, rename, fsync of the directory), so once `write`
 * resolves the job is on disk whole, and a crash leaves either the whole file or none (stray
 * temporary files are ignored). An entry is removed once the job is durable elsewhere; a
 * removal lost in a crash only means the job is handed over once more, which the queues'
 * business-key ids and idempotent processors make harmless.
 */
import { mkdir, readdir, readFile, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import {
  replaceFile,
  sweepTemporaryFiles,
  syncDirectory,
  TEMPORARY_SUFFIX,
} from "./atomic-file.js";

/**
 * Data that survives `JSON.stringify` and `JSON.parse` unchanged: what a job carries. Defined here, below the queues, because the journal is
 * storage that src/payments (settlement intents) uses as well as queues/, and a payments
 * module importing queues/ made a folder circle (queues/settlements.ts imports src/payments).
 */
export type JsonData = null | boolean | number | string | JsonData[] | { [key: string]: JsonData };

const ENTRY_SUFFIX = ".json";
/** Job ids that are safe as file names everywhere (settlement ids: `settlement-<hex>`). */
const JOURNAL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const DIRECTORY_MODE = 0o700;

/** `DATA_DIR/journal/<queue>`: where a queue's journal lives in either mode. */
export function journalDirectory(dataDir: string, queue: string): string {
  return join(dataDir, "journal", queue);
}

export interface JournalEntry<Payload extends JsonData> {
  jobId: string;
  payload: Payload;
}

export interface JournalContents<Payload extends JsonData> {
  entries: JournalEntry<Payload>[];
  /** Files that are not entries this journal wrote (left where they are, never replayed). */
  unreadable: string[];
}

function checkJobId(jobId: string): void {
  if (!JOURNAL_ID.test(jobId)) throw new RangeError(`not a journal job id: ${jobId}`);
}

export class JobJournal<Payload extends JsonData> {
  readonly directory: string;
  #opened: Promise<void> | null = null;

  constructor(directory: string) {
    this.directory = resolve(directory);
  }

  /**
   * Creates the directory, and makes its creation durable too (an fsync of each parent that
   * gained an entry), so that the first entry written is not lost with a directory entry.
   */
  open(): Promise<void> {
    this.#opened ??= this.#create().catch((error: unknown) => {
      this.#opened = null;
      throw error;
    });
    return this.#opened;
  }

  async #create(): Promise<void> {
    const first = await mkdir(this.directory, { recursive: true, mode: DIRECTORY_MODE });
    if (first === undefined) {
      // What a crashed or failed write left behind holds space and is never replayed.
      await sweepTemporaryFiles(this.directory);
      return;
    }
    // `first` is the top directory that did not exist: its parent and everything below it
    // gained an entry.
    let path = this.directory;
    const top = dirname(resolve(first));
    while (true) {
      const parent = dirname(path);
      await syncDirectory(parent);
      if (parent === top || parent === path) break;
      path = parent;
    }
  }

  #path(jobId: string): string {
    return join(this.directory, `${jobId}${ENTRY_SUFFIX}`);
  }

  /** Resolves once the entry is on disk whole; writing an id again replaces its entry. */
  async write(jobId: string, payload: Payload): Promise<void> {
    checkJobId(jobId);
    await this.open();
    await replaceFile(this.#path(jobId), JSON.stringify(payload));
  }

  /** Forgets an entry (no error when it is already gone). */
  async remove(jobId: string): Promise<void> {
    checkJobId(jobId);
    try {
      await unlink(this.#path(jobId));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }

  /** Every entry, by job id; nothing when the journal has never been written. */
  async read(): Promise<JournalContents<Payload>> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT")
        return { entries: [], unreadable: [] };
      throw error;
    }
    const entries: JournalEntry<Payload>[] = [];
    const unreadable: string[] = [];
    for (const name of names.sort()) {
      if (name.endsWith(TEMPORARY_SUFFIX)) continue;
      const jobId = name.slice(0, -ENTRY_SUFFIX.length);
      if (!name.endsWith(ENTRY_SUFFIX) || !JOURNAL_ID.test(jobId)) {
        unreadable.push(name);
        continue;
      }
      try {
        const payload = JSON.parse(await readFile(join(this.directory, name), "utf8")) as Payload;
        entries.push({ jobId, payload });
      } catch {
        unreadable.push(name);
      }
    }
    return { entries, unreadable };
  }
}
