/**
 * The audit directory's housekeeping (issue 37): closed days are compressed, days past
 * `AUDIT_RETENTION_DAYS` removed, and every reader sees a day the same way whether it is
 * `<day>.jsonl`, `<day>.jsonl.gz`, or both.
 *
 * A day is closed an hour after its UTC midnight (`CLOSED_DAY_GRACE_MS`): lines are buffered
 * for a second, a closing server appends its late answers, and web processes sharing the
 * directory may disagree on the time by a little; none of them writes to a day that old.
 *
 * Compressing day D (`compactAuditDir`), lock-free so that every web process may do it:
 *
 *   1. gzip `D.jsonl` into a temporary file (after the bytes of `D.jsonl.gz` when that
 *      already exists: gzip members concatenate), fsync it;
 *   2. if `D.jsonl` grew meanwhile, give up until the next run;
 *   3. rename the temporary file to `D.jsonl.gz`, fsync the directory, remove `D.jsonl`.
 *
 * A crash (or another process) between the rename and the removal leaves `D.jsonl` whose
 * bytes are already the last gzip member of `D.jsonl.gz`. Such a leftover is recognised by
 * that member's trailer (CRC-32 and size of its uncompressed bytes, the file's last 8
 * bytes): readers skip it, and the next compaction removes it. Any other `D.jsonl` beside a
 * `D.jsonl.gz` (lines written after the day was compressed) is read too, and appended as a
 * new member by the next compaction.
 */
import { createReadStream } from "node:fs";
import { type FileHandle, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { StringDecoder } from "node:string_decoder";
import { constants, crc32, createGunzip, createGzip } from "node:zlib";

export const AUDIT_PLAIN_SUFFIX = ".jsonl";
export const AUDIT_COMPRESSED_SUFFIX = ".jsonl.gz";
/** A day is closed this long after its end (see the module comment). */
export const CLOSED_DAY_GRACE_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;
const TEMPORARY_SUFFIX = ".tmp";
const FILE_MODE = 0o600;
const GZIP_TRAILER_BYTES = 8;
const READ_CHUNK_BYTES = 256 * 1024;
/** Header and trailer of an empty gzip member: a shorter file holds no member. */
const GZIP_MIN_BYTES = 18;
const DAY_FILE = /^(\d{4}-\d{2}-\d{2})\.jsonl(\.gz)?$/;

/** The files of one day, in the order their lines were written. */
export interface AuditDayFiles {
  day: string;
  paths: string[];
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === "ENOENT";
}

async function openIfPresent(path: string): Promise<FileHandle | null> {
  try {
    return await open(path, "r");
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

async function removeIfPresent(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

/**
 * Removes `path` if it is still the file `handle` has open: a plain file created after this
 * run opened the day's (late lines, after another process removed it) is left for the next.
 */
async function removeIfSameFile(path: string, handle: FileHandle): Promise<void> {
  const [opened, current] = await Promise.all([
    handle.stat(),
    stat(path).catch((error: unknown) => {
      if (isMissing(error)) return null;
      throw error;
    }),
  ]);
  if (current !== null && current.ino === opened.ino && current.dev === opened.dev) {
    await removeIfPresent(path);
  }
}

/** Makes renames and removals in `directory` durable; a platform without it loses nothing more. */
async function syncDirectory(directory: string): Promise<void> {
  let handle: FileHandle | null = null;
  try {
    handle = await open(directory, "r");
    await handle.sync();
  } catch {
    // Directories cannot be opened or synced on every platform (Windows): the rename itself
    // is still atomic, only its durability across a power cut is left to the file system.
  } finally {
    await handle?.close();
  }
}

/** Day → which of its two files exist, from one listing of `directory`. */
function daysOf(names: string[]): Map<string, { plain: boolean; compressed: boolean }> {
  const days = new Map<string, { plain: boolean; compressed: boolean }>();
  for (const name of names) {
    const match = DAY_FILE.exec(name);
    if (match === null) continue;
    const day = match[1] as string;
    const entry = days.get(day) ?? { plain: false, compressed: false };
    if (match[2] === undefined) entry.plain = true;
    else entry.compressed = true;
    days.set(day, entry);
  }
  return days;
}

/**
 * The bytes of `handle` from its start up to `end` (default: its end when reached), read
 * position by position: a FileHandle stream would hold the handle open past its use.
 */
async function* bytesOf(
  handle: FileHandle,
  end = Number.POSITIVE_INFINITY,
): AsyncGenerator<Buffer> {
  let position = 0;
  while (position < end) {
    const length = Math.min(READ_CHUNK_BYTES, end - position);
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(length), 0, length, position);
    if (bytesRead === 0) return;
    position += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
}

/** Writes every chunk of `source` to `output`, whole. */
function writeTo(output: FileHandle) {
  return async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) {
      let offset = 0;
      while (offset < chunk.length) {
        const { bytesWritten } = await output.write(chunk, offset, chunk.length - offset);
        offset += bytesWritten;
      }
    }
  };
}

/** CRC-32 and size of everything `handle` holds. */
async function checksumOf(handle: FileHandle): Promise<{ crc: number; size: number }> {
  let crc = 0;
  let size = 0;
  for await (const chunk of bytesOf(handle)) {
    crc = crc32(chunk, crc);
    size += chunk.length;
  }
  return { crc, size };
}

/**
 * Whether `plain` holds exactly the bytes of the last gzip member of `compressed`: the
 * leftover of a compaction that renamed its output but did not remove its input.
 */
async function isLeftoverOf(compressed: FileHandle, plain: FileHandle): Promise<boolean> {
  const { size: compressedSize } = await compressed.stat();
  if (compressedSize < GZIP_MIN_BYTES) return false;
  const trailer = Buffer.alloc(GZIP_TRAILER_BYTES);
  await compressed.read(trailer, 0, GZIP_TRAILER_BYTES, compressedSize - GZIP_TRAILER_BYTES);
  const memberCrc = trailer.readUInt32LE(0);
  const memberSize = trailer.readUInt32LE(4);
  const { size: plainSize } = await plain.stat();
  // The trailer keeps the size modulo 2^32: a cheap no before reading the whole file.
  if (plainSize % 2 ** 32 !== memberSize) return false;
  const { crc } = await checksumOf(plain);
  return crc === memberCrc;
}

/** Whether the day's plain file beside its compressed one is a leftover to skip. */
async function plainIsLeftover(compressedPath: string, plainPath: string): Promise<boolean> {
  const compressed = await openIfPresent(compressedPath);
  if (compressed === null) return false;
  try {
    const plain = await openIfPresent(plainPath);
    if (plain === null) return true;
    try {
      return await isLeftoverOf(compressed, plain);
    } finally {
      await plain.close();
    }
  } finally {
    await compressed.close();
  }
}

/**
 * The day files of `directory` whose day starts with `dayPrefix` (`"2026-11"` for a month,
 * `""` for all), sorted by day. Throws when the directory cannot be read.
 */
export async function listAuditDays(directory: string, dayPrefix = ""): Promise<AuditDayFiles[]> {
  const days = daysOf(await readdir(directory));
  const result: AuditDayFiles[] = [];
  for (const [day, files] of [...days].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!day.startsWith(dayPrefix)) continue;
    const compressedPath = join(directory, `${day}${AUDIT_COMPRESSED_SUFFIX}`);
    const plainPath = join(directory, `${day}${AUDIT_PLAIN_SUFFIX}`);
    const paths: string[] = [];
    if (files.compressed) paths.push(compressedPath);
    if (files.plain && !(files.compressed && (await plainIsLeftover(compressedPath, plainPath)))) {
      paths.push(plainPath);
    }
    if (paths.length > 0) result.push({ day, paths });
  }
  return result;
}

/** The lines of one day file (without their newlines), decompressing a `.gz` one. */
export async function* readAuditFileLines(path: string): AsyncGenerator<string> {
  const file = createReadStream(path);
  let input: Readable = file;
  if (path.endsWith(".gz")) {
    const gunzip = createGunzip();
    file.on("error", (error) => gunzip.destroy(error));
    input = file.pipe(gunzip);
  }
  const decoder = new StringDecoder("utf8");
  let rest = "";
  try {
    for await (const chunk of input) {
      const lines = (rest + decoder.write(chunk as Buffer)).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) yield line.endsWith("\r") ? line.slice(0, -1) : line;
    }
    rest += decoder.end();
    if (rest !== "") yield rest;
  } finally {
    file.destroy();
    input.destroy();
  }
}

/** What one compaction did (or, `dryRun`, would do). */
export interface AuditCompaction {
  dryRun: boolean;
  retentionDays: number;
  /** Days whose plain file was compressed (or appended to their compressed file). */
  compressed: string[];
  /** Days removed: older than the retention. */
  removed: string[];
  /** Plain files removed because their compressed day already held them. */
  leftovers: number;
  /** Days left plain because a writer was still appending to them. */
  busy: string[];
  /** Bytes of the directory's files after the run (before it, for a dry run). */
  bytes: number;
}

export interface AuditCompactionOptions {
  /** `AUDIT_RETENTION_DAYS`: days kept after today; 0 keeps every day. */
  retentionDays: number;
  nowMs: number;
  dryRun?: boolean;
}

/** The first day kept by `retentionDays` (0: none is removed). */
export function firstRetainedDay(nowMs: number, retentionDays: number): string | null {
  if (retentionDays === 0) return null;
  return new Date(nowMs - retentionDays * DAY_MS).toISOString().slice(0, 10);
}

/** Whether every writer is done with `day` at `nowMs`. */
export function isClosedDay(day: string, nowMs: number): boolean {
  return Date.parse(`${day}T00:00:00Z`) + DAY_MS + CLOSED_DAY_GRACE_MS <= nowMs;
}

/** Bytes of every file in `directory` (day files and temporary ones): one listing, one stat each. */
export async function auditDirectoryBytes(directory: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if (isMissing(error)) return 0;
    throw error;
  }
  let bytes = 0;
  for (const name of names) {
    try {
      const info = await stat(join(directory, name));
      if (info.isFile()) bytes += info.size;
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }
  return bytes;
}

type DayOutcome = "compressed" | "leftover" | "busy" | "gone";

/** Steps 1–3 of the module comment for one closed day. */
async function compressDay(directory: string, day: string): Promise<DayOutcome> {
  const plainPath = join(directory, `${day}${AUDIT_PLAIN_SUFFIX}`);
  const compressedPath = join(directory, `${day}${AUDIT_COMPRESSED_SUFFIX}`);
  const plain = await openIfPresent(plainPath);
  if (plain === null) return "gone";
  // One handle of the compressed file for the leftover check and the copy: a rename by
  // another process in between cannot make them disagree.
  const existing = await openIfPresent(compressedPath).catch(async (error: unknown) => {
    await plain.close();
    throw error;
  });
  const temporaryPath = join(
    directory,
    `.${day}${AUDIT_COMPRESSED_SUFFIX}.${process.pid}-${Math.random().toString(36).slice(2)}${TEMPORARY_SUFFIX}`,
  );
  let output: FileHandle | null = null;
  try {
    if (existing !== null && (await isLeftoverOf(existing, plain))) {
      await removeIfSameFile(plainPath, plain);
      return "leftover";
    }
    const { size: sizeBefore } = await plain.stat();
    if (sizeBefore === 0) {
      // Opened by a writer that then wrote nothing: no line to keep.
      await removeIfSameFile(plainPath, plain);
      return "gone";
    }
    output = await open(temporaryPath, "wx", FILE_MODE);
    if (existing !== null) await writeTo(output)(bytesOf(existing));
    await pipeline(
      Readable.from(bytesOf(plain, sizeBefore)),
      createGzip({ level: constants.Z_DEFAULT_COMPRESSION }),
      writeTo(output),
    );
    await output.sync();
    await output.close();
    output = null;
    const { size: sizeAfter } = await plain.stat();
    if (sizeAfter !== sizeBefore) {
      await removeIfPresent(temporaryPath);
      return "busy";
    }
    await rename(temporaryPath, compressedPath);
    await syncDirectory(directory);
    await removeIfSameFile(plainPath, plain);
    await syncDirectory(directory);
    return "compressed";
  } catch (error) {
    await output?.close().catch(() => undefined);
    await removeIfPresent(temporaryPath).catch(() => undefined);
    throw error;
  } finally {
    await existing?.close();
    await plain.close();
  }
}

/**
 * Removes the days before the retention, compresses the other closed days, and removes
 * temporary files that a crashed compaction left (older than `CLOSED_DAY_GRACE_MS`). A
 * missing directory is an empty one (no request was audited yet).
 */
export async function compactAuditDir(
  directory: string,
  options: AuditCompactionOptions,
): Promise<AuditCompaction> {
  const dryRun = options.dryRun === true;
  const report: AuditCompaction = {
    dryRun,
    retentionDays: options.retentionDays,
    compressed: [],
    removed: [],
    leftovers: 0,
    busy: [],
    bytes: 0,
  };
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if (isMissing(error)) return report;
    throw error;
  }
  const firstKept = firstRetainedDay(options.nowMs, options.retentionDays);
  const days = [...daysOf(names)].sort(([a], [b]) => (a < b ? -1 : 1));
  for (const [day, files] of days) {
    if (firstKept !== null && day < firstKept) {
      report.removed.push(day);
      if (dryRun) continue;
      if (files.plain) await removeIfPresent(join(directory, `${day}${AUDIT_PLAIN_SUFFIX}`));
      if (files.compressed) {
        await removeIfPresent(join(directory, `${day}${AUDIT_COMPRESSED_SUFFIX}`));
      }
      continue;
    }
    if (!files.plain || !isClosedDay(day, options.nowMs)) continue;
    if (dryRun) {
      const leftover =
        files.compressed &&
        (await plainIsLeftover(
          join(directory, `${day}${AUDIT_COMPRESSED_SUFFIX}`),
          join(directory, `${day}${AUDIT_PLAIN_SUFFIX}`),
        ));
      if (leftover) report.leftovers += 1;
      else report.compressed.push(day);
      continue;
    }
    const outcome = await compressDay(directory, day);
    if (outcome === "compressed") report.compressed.push(day);
    else if (outcome === "leftover") report.leftovers += 1;
    else if (outcome === "busy") report.busy.push(day);
  }
  if (!dryRun) await removeStaleTemporaries(directory, names, options.nowMs);
  report.bytes = await auditDirectoryBytes(directory);
  return report;
}

async function removeStaleTemporaries(
  directory: string,
  names: string[],
  nowMs: number,
): Promise<void> {
  for (const name of names) {
    const temporary =
      name.startsWith(".") &&
      name.includes(AUDIT_COMPRESSED_SUFFIX) &&
      name.endsWith(TEMPORARY_SUFFIX);
    if (!temporary) continue;
    const path = join(directory, name);
    try {
      const info = await stat(path);
      // A younger one may be another process's compaction in progress.
      if (info.mtimeMs + CLOSED_DAY_GRACE_MS <= nowMs) await unlink(path);
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }
}
