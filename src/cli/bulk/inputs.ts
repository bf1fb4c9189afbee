/**
 * The inputs of `receiptd verify` in bulk, in one deterministic order (so `--resume` can skip
 * a prefix): the arguments in the order given; a directory's files recursively, sorted by
 * name; an NDJSON stream line by line. NDJSON is read in chunks and split on `\n`: a
 * million-line file is never held whole. Blank lines are not inputs (their numbers still
 * count, so a source names its real line).
 */
import { createReadStream } from "node:fs";
import { open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { MAX_BUNDLE_BYTES } from "../../verifier/bundle/limits.js";

/** One input: its bytes, or why there are none. */
export type BulkInput =
  | { source: string; bytes: Buffer }
  /** Larger than the verifier's limit: refused without reading it all. */
  | { source: string; tooLarge: number }
  | { source: string; unreadable: string };

export interface InputOptions {
  /** Files (and files found in directories) are NDJSON streams, not single bundles. */
  ndjson: boolean;
  stdin: Readable;
}

/** The files a directory holds, recursively, sorted by name at every level. */
async function* walk(directory: string, ndjson: boolean): AsyncGenerator<string> {
  const entries = await readdir(directory, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) yield* walk(path, ndjson);
    else if (entry.isFile() && wanted(entry.name, ndjson)) yield path;
  }
}

function wanted(name: string, ndjson: boolean): boolean {
  return ndjson ? /\.(ndjson|jsonl)$/.test(name) : name.endsWith(".json");
}

/** Reads at most `limit + 1` bytes, so an oversized file is refused without buffering it. */
export async function readBundleFile(
  path: string,
  limit: number,
): Promise<Buffer | { size: number }> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    if (size > limit) return { size };
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1 << 20, Math.max(1, limit + 1 - total)));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > limit) return { size: total };
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}

async function fileInput(path: string): Promise<BulkInput> {
  try {
    const read = await readBundleFile(path, MAX_BUNDLE_BYTES);
    return Buffer.isBuffer(read)
      ? { source: path, bytes: read }
      : { source: path, tooLarge: read.size };
  } catch (error) {
    return { source: path, unreadable: error instanceof Error ? error.message : String(error) };
  }
}

/** The lines of a stream as inputs named `<name>:<line>`; a line over the limit is refused. */
async function* ndjsonLines(stream: Readable, name: string): AsyncGenerator<BulkInput> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let lineNumber = 0;
  /** Bytes of the current line dropped because it is already over the limit. */
  let overflow = 0;
  const finish = (tail: Buffer): BulkInput | null => {
    lineNumber += 1;
    const size = pendingBytes + tail.length + overflow;
    const source = `${name}:${lineNumber}`;
    let result: BulkInput | null;
    if (size > MAX_BUNDLE_BYTES) result = { source, tooLarge: size };
    else {
      const bytes = pending.length === 0 ? tail : Buffer.concat([...pending, tail]);
      result = isBlank(bytes) ? null : { source, bytes };
    }
    pending = [];
    pendingBytes = 0;
    overflow = 0;
    return result;
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(10, start);
      if (end === -1) break;
      const input = finish(chunk.subarray(start, end));
      if (input !== null) yield input;
      start = end + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (pendingBytes + overflow + rest.length > MAX_BUNDLE_BYTES) overflow += rest.length;
      else {
        // A copy: the stream may reuse its buffer, and a slice would pin the whole chunk.
        pending.push(Buffer.from(rest));
        pendingBytes += rest.length;
      }
    }
  }
  if (pendingBytes > 0 || overflow > 0) {
    const input = finish(Buffer.alloc(0));
    if (input !== null) yield input;
  }
}

function isBlank(bytes: Buffer): boolean {
  for (const byte of bytes) {
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  }
  return true;
}

/** Every input of `args`, in order. */
export async function* bulkInputs(
  args: readonly string[],
  options: InputOptions,
): AsyncGenerator<BulkInput> {
  for (const arg of args) {
    if (arg === "-") {
      yield* ndjsonLines(options.stdin, "-");
      continue;
    }
    let isDirectory = false;
    try {
      isDirectory = (await stat(arg)).isDirectory();
    } catch (error) {
      yield { source: arg, unreadable: error instanceof Error ? error.message : String(error) };
      continue;
    }
    const files = isDirectory ? walk(arg, options.ndjson) : oneFile(arg);
    for await (const path of files) {
      if (options.ndjson) {
        try {
          yield* ndjsonLines(createReadStream(path, { highWaterMark: 1 << 16 }), path);
        } catch (error) {
          yield {
            source: path,
            unreadable: error instanceof Error ? error.message : String(error),
          };
        }
      } else {
        yield await fileInput(path);
      }
    }
  }
}

async function* oneFile(path: string): AsyncGenerator<string> {
  yield path;
}

/**
 * How many inputs there are, when that is cheap to know: files and directories of single
 * bundles (a walk of names); null when a stream is among them (its lines are not counted
 * ahead, which would read it twice).
 */
export async function countInputs(
  args: readonly string[],
  options: { ndjson: boolean },
): Promise<number | null> {
  if (options.ndjson || args.includes("-")) return null;
  let count = 0;
  for (const arg of args) {
    try {
      if ((await stat(arg)).isDirectory()) {
        for await (const _ of walk(arg, false)) count += 1;
        continue;
      }
    } catch {
      // Counted: it becomes one "unreadable" line.
    }
    count += 1;
  }
  return count;
}
