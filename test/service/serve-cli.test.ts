/** `receiptd serve` as an operator runs it: a child process, stopped with SIGTERM. */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { temporaryDataDir } from "./support/service.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));

describe("receiptd serve", () => {
  let dataDir: string;
  before(async () => {
    dataDir = await temporaryDataDir();
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  test("listens, serves, and exits 0 on SIGTERM", { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, ["--import", "tsx", RECEIPTD, "serve", "--port", "0"], {
      env: { ...process.env, DATA_DIR: dataDir, CPU_THREADS: "1", LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    const listening = new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match?.[1]) resolve(match[1]);
      });
      child.once("exit", (code) => reject(new Error(`exited early with ${code}:\n${output}`)));
    });
    const base = await listening;
    const health = await fetch(`${base}/health`);
    assert.deepEqual(await health.json(), { ok: true });

    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    assert.equal(code, 0);
    assert.match(output, /"msg":"shut down"/);
  });

  test("an unknown option is a usage error", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "serve", "--nope"], {
      encoding: "utf8",
    });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /usage: receiptd serve/);
  });

  test("an unusable PORT is refused before anything starts", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "serve"], {
      encoding: "utf8",
      env: { ...process.env, PORT: "http", DATA_DIR: dataDir },
    });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /PORT must be a whole number/);
  });
});
