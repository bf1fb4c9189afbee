/**
 * Whole-file writes that a crash can never leave half done (architecture.md, embedded mode):
 * write a temporary file beside the target, fsync it, put it in place with one atomic
 * directory operation, fsync the directory. Readers see the old file or the new one, never
 * a prefix of either.
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fchmodSync,
  linkSync,
  openSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { link, open, readdir, readFile, rename, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";

/**
 * Temporary files end in this suffix. A failed write removes its own; a crash may leave some
 * behind, which readers ignore and `sweepTemporaryFiles` removes.
 */
export const TEMPORARY_SUFFIX = ".tmp";

/** `<target>.<writer pid>.<random hex>.tmp`: the pid tells a sweep whose file it is. */
const TEMPORARY_NAME = /\.(\d+)\.[0-9a-f]{12}\.tmp$/;
/** Leftovers without a pid (written before names carried one) are removed past this age. */
const UNNAMED_TEMPORARY_AGE_MS = 60_000;

async function writeTemporary(path: string, data: Uint8Array | string, mode: number, sync = true) {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}${TEMPORARY_SUFFIX}`;
  const handle = await open(temporary, "wx", mode);
  try {
    await handle.chmod(mode);
    await handle.writeFile(data);
    if (sync) await handle.sync();
  } catch (error) {
    // A full disk fails here: the partial file must not keep holding the space it took.
    await handle.close().catch(() => {});
    await unlink(temporary).catch(() => {});
    throw error;
  }
  await handle.close();
  return temporary;
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the temporary files of `directory` that no live writer owns: those of processes
 * that are gone (a crash, kill -9), and those under this process's own pid that are older than
 * the process (an earlier life with the same pid: in a container the server is often pid 1).
 * A file of a live process (the CLI writing beside the server) is left alone. Returns how
 * many were removed; a missing directory has none.
 */
export async function sweepTemporaryFiles(directory: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.endsWith(TEMPORARY_SUFFIX)) continue;
    const path = join(directory, name);
    const owner = TEMPORARY_NAME.exec(name);
    const pid = owner === null ? null : Number(owner[1]);
    if (pid !== null && pid !== process.pid && processIsAlive(pid)) continue;
    if (pid === null || pid === process.pid) {
      const info = await stat(path).catch(() => null);
      if (info === null) continue;
      const bornBefore =
        pid === null ? Date.now() - UNNAMED_TEMPORARY_AGE_MS : performance.timeOrigin;
      if (info.mtimeMs >= bornBefore) continue;
    }
    try {
      await unlink(path);
      removed += 1;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  return removed;
}

/** Makes a directory's entries durable (a created, renamed or removed file survives a crash). */
export async function syncDirectory(path: string): Promise<void> {
  const directory = await open(path, "r");
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/**
 * Writes `data` to `path` only if no file is there. The last step is a hard link rather than
 * a rename because a rename would silently replace a file that another process created a
 * moment earlier. Returns false (and writes nothing) when the file already existed.
 */
export async function createFileOnce(
  path: string,
  data: Uint8Array | string,
  mode = 0o600,
): Promise<boolean> {
  const temporary = await writeTemporary(path, data, mode);
  try {
    await link(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await unlink(temporary);
  }
  await syncDirectory(dirname(path));
  return true;
}

/**
 * `createFileOnce` without its two fsyncs, for a caller that makes many files durable at once
 * afterwards (the group-commit store's checkpoint) and holds their data durably elsewhere
 * until then. Synchronous: without an fsync every step is a page-cache operation of a few
 * microseconds, and the promise API's file handles and thread-pool hops cost ten times that
 * in main-thread CPU (issue 33's profile); the caller writes in small chunks between turns
 * of the event loop. A crash leaves the file whole or absent (link is atomic).
 */
export function createFileOnceUnsyncedSync(path: string, data: Uint8Array, mode = 0o600): boolean {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}${TEMPORARY_SUFFIX}`;
  const fd = openSync(temporary, "wx", mode);
  try {
    fchmodSync(fd, mode);
    let written = 0;
    while (written < data.byteLength) written += writeSync(fd, data, written);
  } catch (error) {
    closeSync(fd);
    unlinkSync(temporary);
    throw error;
  }
  closeSync(fd);
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    unlinkSync(temporary);
  }
  return true;
}

/** Fsyncs each file, then each distinct directory holding them. */
export async function syncFiles(paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    const handle = await open(path, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
  for (const directory of new Set(paths.map((path) => dirname(path)))) {
    await syncDirectory(directory);
  }
}

/** Writes `data` to `path`, replacing any file there, atomically. */
export async function replaceFile(
  path: string,
  data: Uint8Array | string,
  mode = 0o600,
): Promise<void> {
  const temporary = await writeTemporary(path, data, mode);
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
  await syncDirectory(dirname(path));
}

/** Removes `path` durably. Returns false when there was no such file. */
export async function removeFile(path: string): Promise<boolean> {
  try {
    await unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  await syncDirectory(dirname(path));
  return true;
}

/** The file's bytes, or null when there is no such file. */
export async function readIfPresent(path: string): Promise<Buffer | null> {
  // A missing file is the common case of a first write (every new settlement, anchor …):
  // answered by one stat, without the rejected open and its Error the profile showed.
  if (!existsSync(path)) return null;
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
