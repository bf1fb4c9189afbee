/** `receiptd serve` as an operator runs it: a child process, stopped with SIGTERM. */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { rm } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
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

  test("starts without loading viem", { timeout: 30_000 }, async () => {
    // A resolve hook in the child names every package a module is resolved from.
    const hook = `export async function resolve(specifier, context, next) {
      const resolved = await next(specifier, context);
      const name = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(resolved.url)?.[1];
      if (name) process.stderr.write("package " + name + "\\n");
      return resolved;
    }`;
    const register = `import { register } from "node:module";
      register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hook)}));`;
    const logPackages = `data:text/javascript,${encodeURIComponent(register)}`;
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "--import", logPackages, RECEIPTD, "serve", "--port", "0"],
      {
        env: { ...process.env, DATA_DIR: dataDir, CPU_THREADS: "1", LOG_LEVEL: "info" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let errors = "";
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString("utf8");
    });
    const exited = once(child, "exit");
    try {
      let output = "";
      const base = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString("utf8");
          const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
          if (match?.[1]) resolve(match[1]);
        });
        child.once("exit", (code) => reject(new Error(`exited early with ${code}:\n${errors}`)));
      });
      // /info publishes the validator address, which startup derived without viem.
      const info = (await (await fetch(`${base}/info`)).json()) as {
        erc8004: { validator_address: string };
      };
      assert.match(info.erc8004.validator_address, /^0x[0-9a-fA-F]{40}$/);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }

    const packages = new Set([...errors.matchAll(/^package (\S+)$/gm)].map((m) => m[1]));
    assert.ok(packages.has("fastify"), "the hook saw the server's packages");
    // viem (with ox and abitype) is loaded on the first payment or attestation: at startup it
    // cost about 1,700 modules and 12 MiB of RSS for two checksums (src/evm/viem.ts).
    for (const name of ["viem", "ox", "abitype"]) assert.ok(!packages.has(name), name);
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

  test("a port already taken: one line naming PORT, exit 2", { timeout: 30_000 }, async () => {
    const taken = createServer();
    taken.listen(0, "127.0.0.1");
    await once(taken, "listening");
    const port = (taken.address() as AddressInfo).port;
    try {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", RECEIPTD, "serve", "--port", String(port)],
        {
          env: { ...process.env, DATA_DIR: dataDir, CPU_THREADS: "1", LOG_LEVEL: "silent" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString("utf8");
      });
      const [code] = await once(child, "exit");
      assert.equal(code, 2);
      assert.equal(
        stderr,
        `error: 127.0.0.1:${port} is already in use (another receiptd?): stop that process, ` +
          "or set PORT (or --port) to a free port\n",
      );
    } finally {
      taken.close();
    }
  });
});
