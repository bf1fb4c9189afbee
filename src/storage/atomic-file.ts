/**
 * Whole-file writes that a crash can never leave half done (architecture.md, embedded mode):
 * write a temporary file beside the target, fsync it, put it in place with one atomic
 * directory operation, fsync the directory. Readers see the old file or the new one, never
 * a prefix of either.
 */
import { randomBytes } from "node:crypto";
import { link, open, readFile, rename, unlink } from "node:fs/promises";
import { dirname } from "node:path";

/** Temporary files end in this suffix; a crash may leave some behind, and they are ignored. */
export const TEMPORARY_SUFFIX = ".tmp";

async function writeTemporary(path: string, data: Uint8Array | string, mode: number) {
  const temporary = `${path}.${randomBytes(6).toString("hex")}${TEMPORARY_SUFFIX}`;
  const handle = await open(temporary, "wx", mode);
  try {
    await handle.chmod(mode);
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temporary;
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

/** The file's bytes, or null when there is no such file. */
export async function readIfPresent(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
