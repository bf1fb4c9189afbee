/**
 * Group commit for the embedded document store (issue 33): the documents of the collections
 * it is given (`settlements`) are made durable by appending them to a log with one `fdatasync`
 * per batch, instead of two `fsync`s per document file. On the 2-core test machine one fsync
 * takes 6–8 ms, so one file per receipt capped ingestion at ~800 receipts/s however much CPU
 * was free; a batch of every receipt signed while the previous batch was syncing shares one.
 *
 * - `create` resolves once the document's line is in the log and the log is synced: durable,
 *   as before. The document is then readable through this store at once (`get`, `create`),
 *   from memory, until a checkpoint has put it in its own file.
 * - A checkpoint (every `checkpointRecords` documents or `checkpointMs`) starts a new log
 *   segment, writes each document of the old one to its file without an fsync of its own,
 *   makes them all durable with one `syncfs` of the file system (`sync -f`), and only then
 *   deletes the old segment. Without `sync -f` (or when it fails), each file is fsynced.
 * - `open` replays the segments a crash left, writing each document with the inner store's
 *   fsynced `create`, which keeps the first document of an id; a torn last line was never
 *   acknowledged and is ignored.
 *
 * Only one process may write these collections through a data directory at a time: the
 * embedded server (no CLI command writes settlements), which is what wraps its store in this.
 */
import { execFile } from "node:child_process";
import { type FileHandle, mkdir, open, readdir, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { syncDirectory } from "./atomic-file.js";
import {
  type CollectionName,
  type CreateResult,
  type DocumentStore,
  DocumentStoreUnavailableError,
  type StoreSpace,
} from "./document-store.js";
import type { FsDocumentStore } from "./fs-document-store.js";

const SEGMENT = /^(\d{12})\.log$/;
const NEWLINE = 0x0a;
const TAB = 0x09;

export interface GroupCommitOptions {
  /** Documents per log segment before a checkpoint (default 4,096). */
  checkpointRecords?: number;
  /** Longest time a document waits in the log before a checkpoint (default 1 s). */
  checkpointMs?: number;
  /**
   * Documents held in memory (logged, not yet checkpointed) past which `create` waits for
   * the checkpoint under way: the bound on memory when files are written slower than the log.
   */
  maxPending?: number;
  /** Makes every file written so far durable at once; default `sync -f <directory>`. */
  syncFileSystem?: (directory: string) => Promise<void>;
  /** Where a failed checkpoint is reported (content-free); its segment stays for the next start. */
  onCheckpointError?: (error: unknown) => void;
}

/** As in fs-document-store.ts: a disk that cannot take the write is a 503, not a fault. */
const DISK_UNAVAILABLE = new Set(["ENOSPC", "EDQUOT", "EROFS", "EIO"]);

function storeError(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code ?? "";
  if (!DISK_UNAVAILABLE.has(code)) return error;
  return new DocumentStoreUnavailableError(`the group-commit log cannot be written: ${code}`, {
    cause: error,
  });
}

/** Ids of logged collections must not hold a tab or a newline (tx hashes never do). */
function lineOf(collection: CollectionName, id: string, bytes: Uint8Array): Buffer {
  if (/[\t\n]/.test(id) || bytes.includes(NEWLINE)) {
    throw new RangeError("a logged document's id and bytes hold no tab or newline");
  }
  return Buffer.concat([Buffer.from(`${collection}\t${id}\t`), bytes, Buffer.from("\n")]);
}

interface Entry {
  collection: CollectionName;
  id: string;
  bytes: Uint8Array;
}

function parseSegment(data: Buffer): Entry[] {
  const entries: Entry[] = [];
  let start = 0;
  while (start < data.length) {
    const end = data.indexOf(NEWLINE, start);
    if (end < 0) break; // A torn last line: its batch was never synced nor acknowledged.
    const first = data.indexOf(TAB, start);
    const second = first < 0 ? -1 : data.indexOf(TAB, first + 1);
    if (second < 0 || second > end) throw new Error("the group-commit log holds a bad line");
    entries.push({
      collection: data.toString("latin1", start, first) as CollectionName,
      id: data.toString("latin1", first + 1, second),
      bytes: data.subarray(second + 1, end),
    });
    start = end + 1;
  }
  return entries;
}

function syncFileSystemCommand(directory: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile("sync", ["-f", directory], (error) => (error === null ? resolve() : reject(error)));
  });
}

interface Segment {
  number: number;
  handle: FileHandle;
  entries: Entry[];
}

export class GroupCommitStore implements DocumentStore {
  readonly #inner: FsDocumentStore;
  readonly #directory: string;
  readonly #logged: ReadonlySet<CollectionName>;
  readonly #checkpointRecords: number;
  readonly #checkpointMs: number;
  readonly #maxPending: number;
  readonly #syncFileSystem: (directory: string) => Promise<void>;
  readonly #onCheckpointError: (error: unknown) => void;
  /** Logged documents not yet in their own durable file, by `collection\tid`. */
  readonly #pending = new Map<string, Uint8Array>();
  #segment: Segment | null = null;
  #nextSegment = 0;
  /** Lines waiting for the next batch, and who waits for it. */
  #queued: Buffer[] = [];
  #waiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  #flushing = false;
  #checkpoint: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    inner: FsDocumentStore,
    directory: string,
    logged: readonly CollectionName[],
    options: GroupCommitOptions = {},
  ) {
    this.#inner = inner;
    this.#directory = directory;
    this.#logged = new Set(logged);
    this.#checkpointRecords = options.checkpointRecords ?? 4096;
    this.#checkpointMs = options.checkpointMs ?? 1000;
    this.#maxPending = options.maxPending ?? 65_536;
    this.#syncFileSystem = options.syncFileSystem ?? syncFileSystemCommand;
    this.#onCheckpointError = options.onCheckpointError ?? (() => {});
  }

  /** Creates the log directory and puts every document a crash left in it in its file. */
  async open(): Promise<void> {
    await mkdir(this.#directory, { recursive: true, mode: 0o700 });
    const names = (await readdir(this.#directory)).filter((name) => SEGMENT.test(name)).sort();
    for (const name of names) {
      const path = join(this.#directory, name);
      for (const { collection, id, bytes } of parseSegment(await readFile(path))) {
        await this.#inner.create(collection, id, bytes);
      }
      await unlink(path);
      this.#nextSegment = Number(SEGMENT.exec(name)?.[1]) + 1;
    }
    if (names.length > 0) await syncDirectory(this.#directory);
    this.#timer = setInterval(() => this.#checkpointInBackground(), this.#checkpointMs);
    this.#timer.unref();
  }

  async get(collection: CollectionName, id: string): Promise<Uint8Array | null> {
    return this.#pending.get(`${collection}\t${id}`) ?? this.#inner.get(collection, id);
  }

  async create(collection: CollectionName, id: string, bytes: Uint8Array): Promise<CreateResult> {
    if (!this.#logged.has(collection)) return this.#inner.create(collection, id, bytes);
    const key = `${collection}\t${id}`;
    const line = lineOf(collection, id, bytes);
    if (this.#pending.size >= this.#maxPending) await this.#startCheckpoint().catch(() => {});
    const logged = this.#pending.get(key);
    if (logged !== undefined) return { created: false, stored: logged };
    const stored = await this.#inner.get(collection, id);
    // Another create of the same id may have logged it while the file was read.
    const raced = this.#pending.get(key);
    if (raced !== undefined) return { created: false, stored: raced };
    if (stored !== null) return { created: false, stored };
    this.#pending.set(key, bytes);
    try {
      await this.#append(line, { collection, id, bytes });
    } catch (error) {
      this.#pending.delete(key);
      throw error;
    }
    return { created: true, stored: bytes };
  }

  #append(line: Buffer, entry: Entry): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queued.push(line);
      this.#waiters.push({
        resolve: () => {
          this.#segment?.entries.push(entry);
          resolve();
        },
        reject,
      });
      if (!this.#flushing) void this.#flush();
    });
  }

  /** Writes every queued line in one write and one fdatasync; repeats while lines arrive. */
  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#queued.length > 0) {
        const lines = this.#queued;
        const waiters = this.#waiters;
        this.#queued = [];
        this.#waiters = [];
        try {
          const segment = await this.#currentSegment();
          await segment.handle.write(Buffer.concat(lines));
          await segment.handle.datasync();
          for (const waiter of waiters) waiter.resolve();
        } catch (error) {
          for (const waiter of waiters) waiter.reject(storeError(error));
        }
        if ((this.#segment?.entries.length ?? 0) >= this.#checkpointRecords) {
          this.#checkpointInBackground();
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  async #currentSegment(): Promise<Segment> {
    if (this.#segment !== null) return this.#segment;
    const number = this.#nextSegment++;
    const name = `${String(number).padStart(12, "0")}.log`;
    const handle = await open(join(this.#directory, name), "a", 0o600);
    // The segment's directory entry must be durable before its first synced line counts.
    await syncDirectory(this.#directory);
    this.#segment = { number, handle, entries: [] };
    return this.#segment;
  }

  #checkpointInBackground(): void {
    this.#startCheckpoint().catch(this.#onCheckpointError);
  }

  #startCheckpoint(): Promise<void> {
    this.#checkpoint ??= this.#runCheckpoint().finally(() => {
      this.#checkpoint = null;
    });
    return this.#checkpoint;
  }

  /**
   * Closes the current segment (new lines go to a new one), writes its documents to their
   * files, makes them durable together, and deletes the segment. A failure leaves the segment
   * in place: the next start replays it.
   */
  async #runCheckpoint(): Promise<void> {
    // Lines being synced belong to this segment: wait until they are in it.
    while (this.#flushing) await new Promise((resolve) => setImmediate(resolve));
    const segment = this.#segment;
    if (segment === null || segment.entries.length === 0) return;
    this.#segment = null;
    await segment.handle.close();
    const paths = await this.#inner.createManyUnsynced(segment.entries);
    try {
      await this.#syncFileSystem(this.#directory);
    } catch {
      await this.#inner.syncFiles(paths);
    }
    await unlink(join(this.#directory, `${String(segment.number).padStart(12, "0")}.log`));
    for (const { collection, id, bytes } of segment.entries) {
      const key = `${collection}\t${id}`;
      if (this.#pending.get(key) === bytes) this.#pending.delete(key);
    }
  }

  replace(
    collection: CollectionName,
    id: string,
    expected: Uint8Array | null,
    bytes: Uint8Array,
  ): Promise<boolean> {
    return this.#inner.replace(collection, id, expected, bytes);
  }

  delete(collection: CollectionName, id: string): Promise<boolean> {
    return this.#inner.delete(collection, id);
  }

  async list(collection: CollectionName, prefix = ""): Promise<string[]> {
    // A checkpoint makes every logged document a file first.
    if (this.#logged.has(collection)) {
      await this.#checkpoint?.catch(() => {});
      await this.#startCheckpoint();
    }
    return this.#inner.list(collection, prefix);
  }

  space(): Promise<StoreSpace> {
    return this.#inner.space();
  }

  /** Writes what is logged to its files (a clean stop leaves no segment), then closes. */
  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#checkpoint?.catch(() => {});
    await this.#startCheckpoint().catch(this.#onCheckpointError);
    await this.#inner.close();
  }
}
