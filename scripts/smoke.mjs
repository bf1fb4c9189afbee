#!/usr/bin/env node
// A served smoke test: start `receiptd serve` (embedded mode, a free port, a temporary
// DATA_DIR), create a key with `receiptd keys create`, verify one corpus bundle over HTTP and
// compare it with the reference's expected result, then stop the server with SIGTERM and
// check it exits 0. Every child runs on the node that runs this script, so
// `/path/to/node22 scripts/smoke.mjs` checks that Node line (scripts/node-lines.mjs does).
//
//   node scripts/smoke.mjs [--corpus DIR]     (needs `npm run build`; DIR: ../shared/corpus)
//
// Exit 0 and one line when it all works; exit 1 and what went wrong otherwise.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const ROOT = resolve(import.meta.dirname, "..");
const RECEIPTD = join(ROOT, "dist/src/cli/receiptd.js");
const BUNDLE = "vectors/02_happy_full.json";
const LISTEN_TIMEOUT_MS = 60_000;

const { values } = parseArgs({ options: { corpus: { type: "string" } } });
const corpus = resolve(values.corpus ?? join(ROOT, "../shared/corpus"));
const dataDir = mkdtempSync(join(tmpdir(), "receiptd-smoke-"));
/** Embedded mode whatever the caller's environment says. */
const env = { ...process.env, DATA_DIR: dataDir, CPU_THREADS: "1", LOG_LEVEL: "info" };
for (const name of ["REDIS_URL", "DATABASE_URL", "HOST", "PORT", "X402_PAY_TO", "METRICS_PORT"]) {
  delete env[name];
}

/** The origin the server's startup line names; rejects if it exits or takes too long. */
function listening(server) {
  return new Promise((resolvePromise, reject) => {
    let output = "";
    const timer = setTimeout(
      () => reject(new Error(`receiptd serve did not listen:\n${output}`)),
      LISTEN_TIMEOUT_MS,
    );
    server.stdout.on("data", (chunk) => {
      output += chunk;
      const match = /Server listening at (http:\/\/[^"\s]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolvePromise(match[1]);
      }
    });
    server.stderr.on("data", (chunk) => {
      output += chunk;
    });
    server.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`receiptd serve exited with ${code}:\n${output}`));
    });
  });
}

/** Keys compared in a fixed order: the answer's member order is not what is checked here. */
function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted(value[key])]),
  );
}

async function smoke() {
  const bundle = readFileSync(join(corpus, BUNDLE));
  const expected = JSON.parse(readFileSync(join(corpus, "expected", BUNDLE), "utf8"));
  const key = execFileSync(
    process.execPath,
    [RECEIPTD, "keys", "create", "--name", "smoke", "--key-only"],
    { env, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
  ).trim();
  const server = spawn(process.execPath, [RECEIPTD, "serve", "--port", "0"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout.setEncoding("utf8");
  server.stderr.setEncoding("utf8");
  let verdict;
  let failure;
  try {
    verdict = await verifyOnce(await listening(server), key, bundle, expected);
  } catch (error) {
    failure = error;
  }
  if (server.exitCode === null && server.signalCode === null) {
    server.kill("SIGTERM");
    const [code] = await once(server, "exit");
    if (code !== 0) failure ??= new Error(`receiptd serve exited with ${code} on SIGTERM`);
  }
  if (failure !== undefined) throw failure;
  return verdict;
}

/** POST /verify of the bundle; its answer must be the reference's result plus `service`. */
async function verifyOnce(origin, key, bundle, expected) {
  const response = await fetch(`${origin}/verify`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: bundle,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST /verify: ${response.status} ${text}`);
  const { service: _service, ...result } = JSON.parse(text);
  if (JSON.stringify(sorted(result)) !== JSON.stringify(sorted(expected))) {
    throw new Error(`POST /verify answered other than the reference:\n${text}`);
  }
  return result.verdict;
}

try {
  const verdict = await smoke();
  console.log(
    `smoke: node ${process.version}: receiptd serve started, verified ${BUNDLE} ` +
      `(${verdict}, as the reference), stopped cleanly`,
  );
} catch (error) {
  console.error(
    `smoke: node ${process.version}: ${error instanceof Error ? error.message : error}`,
  );
  process.exitCode = 1;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
