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
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { compareCodePoints } from "../verifier/json/canonical.js";
import { createFileOnce, readIfPresent, replaceFile } from "./atomic-file.js";
import type { CollectionName, CreateResult, DocumentStore } from "./document-store.js";

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

export class FsDocumentStore implements DocumentStore {
  readonly #root: string;
  readonly #ready = new Map<CollectionName, Promise<string>>();
  /** Tail of the chain of pending replaces, per document path. */
  readonly #replacing = new Map<string, Promise<unknown>>();

  constructor(dataDir: string) {
    this.#root = join(dataDir, "store");
  }

  #directory(collection: CollectionName): Promise<string> {
    let ready = this.#ready.get(collection);
    if (ready === undefined) {
      const directory = join(this.#root, collection);
      ready = mkdir(directory, { recursive: true, mode: 0o700 }).then(() => directory);
      this.#ready.set(collection, ready);
    }
    return ready;
  }

  async #path(collection: CollectionName, id: string): Promise<string> {
    return join(await this.#directory(collection), fileNameFor(id));
  }

  async get(collection: CollectionName, id: string): Promise<Uint8Array | null> {
    return readIfPresent(await this.#path(collection, id));
  }

  async create(collection: CollectionName, id: string, bytes: Uint8Array): Promise<CreateResult> {
    const path = await this.#path(collection, id);
    if (await createFileOnce(path, bytes)) return { created: true, stored: bytes };
    const stored = await readIfPresent(path);
    if (stored === null) throw new Error("a document vanished while being created");
    return { created: false, stored };
  }

  async replace(
    collection: CollectionName,
    id: string,
    expected: Uint8Array | null,
    bytes: Uint8Array,
  ): Promise<boolean> {
    const path = await this.#path(collection, id);
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
      return await attempt;
    } finally {
      if (this.#replacing.get(path) === settled) this.#replacing.delete(path);
    }
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
