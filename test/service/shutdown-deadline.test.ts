/**
 * A SIGTERM drain is bounded (issue 22): a real server process holds a request whose CPU task
 * never ends (a spinning worker module); after SIGTERM it waits `SHUTDOWN_DRAIN_MS`, then
 * terminates the task, answers the request 503 `overloaded`, and exits with 1, without a
 * second signal.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { KeyStore } from "../../src/access/api-keys.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { SPIN_MARKER, SPINNING } from "./fixtures/spin-signal.js";

const SERVER = fileURLToPath(new URL("./fixtures/spinning-server.ts", import.meta.url));

test("after SHUTDOWN_DRAIN_MS a running task is terminated and the process exits", {
  timeout: 90_000,
}, async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "receiptd-drain-"));
  try {
    const store = new FsDocumentStore(dataDir);
    const { key } = await new KeyStore(store, { defaultDailyCap: 1000 }).create({ name: "ci" });
    await store.close();
    const child = spawn(process.execPath, ["--import", "tsx", SERVER], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: "0",
        LOG_LEVEL: "info",
        CPU_THREADS: "1",
        CPU_TASK_DEADLINE_MS: "3600000",
        SHUTDOWN_DRAIN_MS: "1000",
      },
    });
    child.stderr.resume();
    const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    let output = "";
    const waiters: (() => void)[] = [];
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
      for (const wake of waiters.splice(0)) wake();
    });
    const seen = async (pattern: RegExp): Promise<RegExpExecArray> => {
      for (;;) {
        const match = pattern.exec(output);
        if (match !== null) return match;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    };
    const [, base] = await seen(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/);
    const answer = fetch(`${base}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-key": key },
      body: SPIN_MARKER,
    });
    await seen(new RegExp(`^${SPINNING}$`, "m"));
    child.kill("SIGTERM");
    const response = await answer;
    assert.equal(response.status, 503);
    assert.equal(((await response.json()) as { error: string }).error, "overloaded");
    const [code, signal] = await exited;
    assert.deepEqual([code, signal], [1, null]);
    assert.match(output, /drain deadline passed/);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
