/**
 * Issue 14: an unreachable Redis used to fill the log with a line per reconnect attempt per
 * connection, none with a cause. A `receiptd worker` pointed at a port where no Redis listens
 * (a private one, never the shared Redis) logs exactly one outage line with the cause, and one
 * recovery line once a Redis comes up there; its lines have the web's format.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { type PrivateRedis, randomPrefix, startPrivateRedis } from "../redis/support.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
/** How long the worker is left facing a dead port: dozens of reconnect attempts. */
const OUTAGE_MS = 4000;
const DEADLINE_MS = 30_000;

interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

describe("receiptd worker with Redis unreachable", () => {
  let redis: PrivateRedis;
  let dataDir: string;
  let worker: ChildProcess;
  const lines: LogLine[] = [];
  let raw = "";

  before(async () => {
    redis = await startPrivateRedis({ running: false });
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-worker-outage-"));
    worker = spawn(process.execPath, ["--import", "tsx", RECEIPTD, "worker"], {
      env: {
        ...process.env,
        REDIS_URL: redis.url,
        REDIS_PREFIX: randomPrefix(),
        DATA_DIR: dataDir,
        DATABASE_URL: "",
        LOG_LEVEL: "info",
        WORKER_METRICS_PORT: "0",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    worker.stdout?.on("data", (chunk: Buffer) => {
      raw += chunk.toString("utf8");
      const complete = raw.split("\n");
      raw = complete.pop() ?? "";
      for (const line of complete) if (line !== "") lines.push(JSON.parse(line) as LogLine);
    });
  });
  after(async () => {
    if (worker.exitCode === null && worker.signalCode === null) {
      const exited = once(worker, "exit");
      worker.kill("SIGKILL");
      await exited;
    }
    await redis.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function until(what: string, done: () => boolean): Promise<void> {
    const deadline = Date.now() + DEADLINE_MS;
    while (!done()) {
      if (Date.now() > deadline)
        assert.fail(`timed out waiting for ${what}:\n${JSON.stringify(lines)}`);
      await sleep(50);
    }
  }

  const outageLines = () => lines.filter((line) => line.msg.startsWith("redis unavailable"));
  const recoveryLines = () => lines.filter((line) => line.msg === "redis available again");

  test("one line with the cause for the outage, one for the recovery", async () => {
    await until("the outage line", () => outageLines().length > 0);
    await sleep(OUTAGE_MS);
    assert.equal(outageLines().length, 1, JSON.stringify(lines));
    const [outage] = outageLines();
    assert.equal(outage?.level, "warn");
    assert.match(
      outage?.msg ?? "",
      /^redis unavailable \(ECONNREFUSED\); retrying in the background$/,
    );
    assert.deepEqual(
      lines.filter((line) => line.level !== "info" && line !== outage),
      [],
      "nothing else is logged while Redis is away",
    );

    await redis.start();
    await until("the worker's startup line", () =>
      lines.some((line) => line.msg === "worker ready"),
    );
    assert.equal(recoveryLines().length, 1, JSON.stringify(lines));
    assert.equal(outageLines().length, 1);
    const ready = lines.find((line) => line.msg === "worker ready");
    assert.equal(ready?.dataDir, dataDir);
    assert.match(String(ready?.issuer), /^did:key:z6Mk/);
    // The startup line names the listener the worker really serves (it said "off").
    const listening = lines.find((line) => line.msg === "metrics listening");
    assert.match(String(ready?.metrics), /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.equal(ready?.metrics, listening?.url);
    // The web's format (plugins/logging.ts): level names, time, pid and hostname on every line.
    for (const line of lines) {
      assert.equal(typeof line.level, "string");
      assert.equal(typeof line.time, "number");
      assert.equal(line.pid, worker.pid);
      assert.equal(typeof line.hostname, "string");
    }

    const exited = once(worker, "exit");
    worker.kill("SIGTERM");
    assert.deepEqual(await exited, [0, null]);
  });
});
