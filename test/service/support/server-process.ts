/**
 * The real server as a child process (`receiptd serve --port 0`), for tests that kill it with
 * SIGKILL and start it again on the same DATA_DIR. Resolves once it listens, with its URL.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

const RECEIPTD = fileURLToPath(new URL("../../../src/cli/receiptd.ts", import.meta.url));

export interface ServerProcess {
  child: ChildProcessWithoutNullStreams;
  /** `http://127.0.0.1:<port>`. */
  base: string;
}

/** Starts the server with `env` on top of this process's environment (LOG_LEVEL ≥ info). */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", RECEIPTD, "serve", "--port", "0"], {
    env: { ...process.env, LOG_LEVEL: "info", ...env },
  });
  child.stderr.resume();
  let output = "";
  const base = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        child.stdout.off("data", onData);
        child.off("exit", onExit);
        child.stdout.resume();
        resolve(match[1]);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`exited early (${code}):\n${output}`));
    child.stdout.on("data", onData);
    child.once("exit", onExit);
  });
  return { child, base };
}

/** Stops the server with SIGTERM; resolves with its exit code and signal. */
export async function stopServerProcess(
  server: ServerProcess,
): Promise<[number | null, NodeJS.Signals | null]> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) {
    return [server.child.exitCode, server.child.signalCode];
  }
  const stopped = once(server.child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  server.child.kill("SIGTERM");
  return stopped;
}
