/**
 * `DATA_DIR/server.json`: which server runs on this data directory. `receiptd serve` writes it
 * once it listens and removes it when it stops; operator commands (`receiptd keys create`)
 * read it to tell whether they act on the DATA_DIR of a running server, which is how a key
 * created next to the wrong `./data` gets a warning instead of a silent 401 later.
 *
 * A crashed server leaves its file behind, so a reader on the same host checks that the pid
 * is alive; on another host (a shared, mounted DATA_DIR) it cannot, and says so.
 */
import { rm } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { readIfPresent, replaceFile } from "../storage/atomic-file.js";

export const SERVER_FILE = "server.json";

export interface ServerFile {
  url: string;
  pid: number;
  hostname: string;
  started_at: string;
  issuer: string;
  mode: "embedded" | "distributed";
}

export function serverFilePath(dataDir: string): string {
  return join(dataDir, SERVER_FILE);
}

export async function writeServerFile(dataDir: string, server: ServerFile): Promise<void> {
  await replaceFile(serverFilePath(dataDir), Buffer.from(`${JSON.stringify(server, null, 2)}\n`));
}

/** Removes the file if it still names this process (another server may have started since). */
export async function removeServerFile(dataDir: string): Promise<void> {
  const current = await readServerFile(dataDir);
  if (current === null || current.pid !== process.pid || current.hostname !== hostname()) return;
  await rm(serverFilePath(dataDir), { force: true });
}

function isServerFile(value: unknown): value is ServerFile {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.url === "string" &&
    typeof record.pid === "number" &&
    typeof record.hostname === "string" &&
    typeof record.started_at === "string" &&
    typeof record.issuer === "string"
  );
}

/** The file's content, or null when there is none or it is not one of ours. */
export async function readServerFile(dataDir: string): Promise<ServerFile | null> {
  const bytes = await readIfPresent(serverFilePath(dataDir));
  if (bytes === null) return null;
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"));
    return isServerFile(value) ? value : null;
  } catch {
    return null;
  }
}

export type ServerLiveness = "running" | "stopped" | "unknown";

/** Whether the server a file names still runs: only a process on this host can be checked. */
export function serverLiveness(server: ServerFile): ServerLiveness {
  if (server.hostname !== hostname()) return "unknown";
  try {
    process.kill(server.pid, 0);
    return "running";
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM" ? "running" : "stopped";
  }
}
