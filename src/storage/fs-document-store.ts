/**
 * The embedded `DocumentStore`: one file per document under `<dataDir>/store/<collection>/`,
 * written atomically (temp file, fsync, link or rename, fsync the directory), so a crash
 * leaves every document either absent or whole.
 *
 * `create` is atomic across processes (a hard link fails if the name exists), which is what
 * the CLI and the server need when they share a data directory. `replace` is serialised per
 * document inside this process only: in embedded mode every document that is ever replaced
 * (upgraded anchor proofs, revocation documents) has one writing process at a time.
 */
import { mkdir, readdir, statfs } from "node:fs/promises";
import { join } from "node:path";
import { compareCodePoints } from "../verifier/json/canonical.js";
import {
  createFileOnce,
  createFileOnceUnsyncedSync,
  readIfPresent,
  removeFile,
  replaceFile,
  sweepTemporaryFiles,
  syncFiles,
} from "./atomic-file.js";
import {
  type CollectionName,
  type CreateResult,
  type DocumentStore,
  DocumentStoreUnavailableError,
  type StoreSpace,
} from "./document-store.js";

const DOCUMENT_SUFFIX = ".json";

/**
 * Ids (`sha256:…`, `did:key:…`, `0x…`) become file names that cannot climb out of the
 * directory or collide: every byte outside [A-Za-z0-9_-] is percent-encoded, `.` included.
 * File names are limited to 255 bytes, so encoded ids are too (every id the service makes
 * is ASCII and well under it).
 */
const MAX_ENCODED_ID = 250;

function fileNameFor(id: string): string {
  const encoded = encodeURIComponent(id).replace(
    /[!'()*.~]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  if (id.length === 0 || encoded.length > MAX_ENCODED_ID) {
    throw new RangeError(`document id must be 1–${MAX_ENCODED_ID} bytes once percent-encoded`);
  }
  return `${encoded}${DOCUMENT_SUFFIX}`;
}

function idFor(fileName: string): string {
  return decodeURIComponent(fileName.slice(0, -DOCUMENT_SUFFIX.length));
}

function sameBytes(left: Uint8Array, right: Uint8Array): boolean {
  return Buffer.from(left.buffer, left.byteOffset, left.byteLength).equals(right);
}

/**
 * Errors that mean the disk cannot take the write now (full, over quota, read-only, failing):
 * the service answers 503 with its store code and the client retries, as for a database outage.
 */
const DISK_UNAVAILABLE = new Set(["ENOSPC", "EDQUOT", "EROFS", "EIO"]);
/** Of those, the ones that mean "no space": they mark the store full until space is back. */
const NO_SPACE = new Set(["ENOSPC", "EDQUOT"]);

/** Free space below which the store reports `low_space` (`STORE_MIN_FREE_BYTES`). */
export const DEFAULT_MIN_FREE_BYTES = 64 * 1024 * 1024;

export interface FsDocumentStoreOptions {
  /** Free bytes below which `space()` says `low_space` (default 64 MiB). */
  minFreeBytes?: number;
}

export class FsDocumentStore implements DocumentStore {
  readonly #root: string;
  readonly #minFreeBytes: number;
  readonly #ready = new Map<CollectionName, Promise<string>>();
  /** Tail of the chain of pending replaces, per document path. */
  readonly #replacing = new Map<string, Promise<unknown>>();
  /** Set by a write that found no space; cleared by a write that succeeds or by freed space. */
  #full = false;

  constructor(dataDir: string, options: FsDocumentStoreOptions = {}) {
    this.#root = join(dataDir, "store");
    this.#minFreeBytes = options.minFreeBytes ?? DEFAULT_MIN_FREE_BYTES;
  }

  #directory(collection: CollectionName): Promise<string> {
    let ready = this.#ready.get(collection);
    if (ready === undefined) {
      const directory = join(this.#root, collection);
      ready = mkdir(directory, { recursive: true, mode: 0o700 }).then(() => directory);
      ready.catch(() => this.#ready.delete(collection));
      this.#ready.set(collection, ready);
    }
    return ready;
  }

  /**
   * Removes the temporary files that crashed or failed writers left in every collection
   * (`sweepTemporaryFiles`: never a live process's). The server runs it at start. Returns how
   * many were removed.
   */
  async sweepTemporaryFiles(): Promise<number> {
    let collections: string[];
    try {
      collections = await readdir(this.#root);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
      throw error;
    }
    let removed = 0;
    for (const collection of collections) {
      removed += await sweepTemporaryFiles(join(this.#root, collection));
    }
    return removed;
  }

  /** Runs a write; a disk that cannot take it becomes `DocumentStoreUnavailableError`. */
  async #write<T>(work: () => Promise<T>): Promise<T> {
    try {
      const result = await work();
      this.#full = false;
      return result;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      if (!DISK_UNAVAILABLE.has(code)) throw error;
      if (NO_SPACE.has(code)) this.#full = true;
      throw new DocumentStoreUnavailableError(`document files cannot be written: ${code}`, {
        cause: error,
      });
    }
  }

  /**
   * The space left where documents are written, and whether writes are refused for the lack
   * of it. A store marked full by a failed write is cleared here once the free space is back
   * above the minimum, so `/health` recovers without waiting for a write.
   */
  async space(): Promise<StoreSpace> {
    await mkdir(this.#root, { recursive: true, mode: 0o700 });
    const info = await statfs(this.#root);
    const freeBytes = info.bavail * info.bsize;
    if (this.#full && freeBytes >= this.#minFreeBytes) this.#full = false;
    const state = this.#full ? "full" : freeBytes < this.#minFreeBytes ? "low_space" : "ok";
    return { state, freeBytes, minFreeBytes: this.#minFreeBytes };
  }

  async #path(collection: CollectionName, id: string): Promise<string> {
    return join(await this.#directory(collection), fileNameFor(id));
  }

  async get(collection: CollectionName, id: string): Promise<Uint8Array | null> {
    return readIfPresent(await this.#path(collection, id));
  }

  async create(collection: CollectionName, id: string, bytes: Uint8Array): Promise<CreateResult> {
    const path = await this.#write(() => this.#path(collection, id));
    if (await this.#write(() => createFileOnce(path, bytes)))
      return { created: true, stored: bytes };
    const stored = await readIfPresent(path);
    if (stored === null) throw new Error("a document vanished while being created");
    return { created: false, stored };
  }

  /**
   * `create` without fsyncs, for the group-commit store's checkpoint (group-commit-store.ts),
   * which holds the documents durably in its log until `syncFiles` or a `syncfs` covered them.
   * Writes `CHUNK` files per turn of the event loop. Returns the paths this call wrote (a
   * document already there is left as it is).
   */
  async createManyUnsynced(
    entries: readonly { collection: CollectionName; id: string; bytes: Uint8Array }[],
  ): Promise<string[]> {
    const CHUNK = 32;
    const written: string[] = [];
    for (let start = 0; start < entries.length; start += CHUNK) {
      if (start > 0) await new Promise((resolve) => setImmediate(resolve));
      for (const { collection, id, bytes } of entries.slice(start, start + CHUNK)) {
        const path = await this.#write(() => this.#path(collection, id));
        await this.#write(async () => {
          if (createFileOnceUnsyncedSync(path, bytes)) written.push(path);
        });
      }
    }
    return written;
  }

  /** Makes files written by `createManyUnsynced` durable, one by one. */
  syncFiles(paths: readonly string[]): Promise<void> {
    return this.#write(() => syncFiles(paths));
  }

  async replace(
    collection: CollectionName,
    id: string,
    expected: Uint8Array | null,
    bytes: Uint8Array,
  ): Promise<boolean> {
    const path = await this.#write(() => this.#path(collection, id));
    const previous = this.#replacing.get(path) ?? Promise.resolve();
    const attempt = previous.then(async () => {
      const current = await readIfPresent(path);
      if (
        current === null ? expected !== null : expected === null || !sameBytes(current, expected)
      ) {
        return false;
      }
      if (current === null) return createFileOnce(path, bytes);
      await replaceFile(path, bytes);
      return true;
    });
    const settled = attempt.catch(() => {});
    this.#replacing.set(path, settled);
    try {
      return await this.#write(() => attempt);
    } finally {
      if (this.#replacing.get(path) === settled) this.#replacing.delete(path);
    }
  }

  async delete(collection: CollectionName, id: string): Promise<boolean> {
    const path = await this.#path(collection, id);
    // After any replace in flight, so a removal is never undone by a write queued before it.
    await this.#replacing.get(path);
    return this.#write(() => removeFile(path));
  }

  async list(collection: CollectionName, prefix = ""): Promise<string[]> {
    const names = await readdir(await this.#directory(collection));
    return names
      .filter((name) => name.endsWith(DOCUMENT_SUFFIX))
      .map(idFor)
      .filter((id) => id.startsWith(prefix))
      .sort(compareCodePoints);
  }

  async close(): Promise<void> {
    await Promise.all(this.#replacing.values());
  }
}
