#!/usr/bin/env node
// MCP conformance: the server scenarios of @modelcontextprotocol/conformance that apply to
// receiptd, run against `receiptd serve` (dist/, embedded mode, a temporary DATA_DIR) on
// 127.0.0.1, on the node that runs this script. scripts/node-lines.mjs runs it on Node 22 and
// 24; the package needs Node 22 or later (its dependencies say so), so it is installed with
// npm into DIR (default $TMPDIR/receiptd-mcp-conformance), not as a devDependency that
// `npm ci` on Node 20 would have to install.
//
//   node scripts/mcp-conformance.mjs [--dir DIR] [--results DIR]   (needs `npm run build`)
//
// Every scenario of the pinned version is named below, as run or as not applying (why:
// docs/mcp.md); a version with other scenarios fails here until they are sorted. A scenario
// passes when the tool exits 0 and every check it made is SUCCESS (a WARNING fails it).
// Exit 0 only if every applicable scenario passes.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const ROOT = resolve(import.meta.dirname, "..");
const RECEIPTD = join(ROOT, "dist/src/cli/receiptd.js");
const PACKAGE = "@modelcontextprotocol/conformance";
const VERSION = "0.1.16";
const LISTEN_TIMEOUT_MS = 60_000;
const SCENARIO_TIMEOUT_MS = 120_000;

/** The scenarios run, and what each shows of receiptd. */
const APPLICABLE = {
  "server-initialize": "the SDK client connects: initialize, capabilities, server info",
  ping: "ping answers {}",
  "tools-list": "every tool has a name, a description and an input schema",
  "dns-rebinding-protection":
    "a foreign Host/Origin is refused (403), the server's own origin is served",
};

/** The scenarios that cannot apply to a stateless, tools-only server, and why. */
const NOT_APPLICABLE = {
  "logging-set-level": "no logging capability (a stateless server sends no notifications)",
  "tools-call-with-logging": "the fixture tool test_tool_with_logging; no logging capability",
  "completion-complete": "no completions capability (no prompts or resource templates)",
  "tools-call-simple-text": "calls the conformance fixture tool test_simple_text",
  "tools-call-image": "calls the fixture tool test_image_content",
  "tools-call-audio": "calls the fixture tool test_audio_content",
  "tools-call-embedded-resource": "calls the fixture tool test_embedded_resource",
  "tools-call-mixed-content": "calls the fixture tool test_multiple_content_types",
  "tools-call-error": "calls the fixture tool test_error_handling",
  "tools-call-with-progress": "the fixture tool test_tool_with_progress; no server-sent messages",
  "tools-call-sampling": "the fixture tool test_sampling; sampling is a server-to-client request",
  "tools-call-elicitation": "the fixture tool test_elicitation; a server-to-client request",
  "elicitation-sep1034-defaults": "2025-11-25 elicitation, a server-to-client request",
  "elicitation-sep1330-enums": "2025-11-25 elicitation, a server-to-client request",
  "json-schema-2020-12": "2025-11-25 (not served); the fixture tool json_schema_2020_12_tool",
  "server-sse-polling": "2025-11-25 SSE streams with sessions; receiptd answers JSON, GET is 405",
  "server-sse-multiple-streams": "SSE streams with sessions; receiptd answers JSON, GET is 405",
  "resources-list": "no resources capability",
  "resources-read-text": "no resources capability",
  "resources-read-binary": "no resources capability",
  "resources-templates-read": "no resources capability",
  "resources-subscribe": "no resources capability",
  "resources-unsubscribe": "no resources capability",
  "prompts-list": "no prompts capability",
  "prompts-get-simple": "no prompts capability",
  "prompts-get-with-args": "no prompts capability",
  "prompts-get-embedded-resource": "no prompts capability",
  "prompts-get-with-image": "no prompts capability",
};

const { values } = parseArgs({
  options: {
    dir: { type: "string", default: join(tmpdir(), "receiptd-mcp-conformance") },
    results: { type: "string" },
  },
});

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  console.error(`mcp-conformance: ${PACKAGE} needs Node 22 or later; this is ${process.version}`);
  process.exit(2);
}

/** Installs (or refreshes) the pinned package under `dir` and returns its CLI. */
function installConformance(dir) {
  mkdirSync(dir, { recursive: true });
  const npm = spawnSync(
    "npm",
    [
      "install",
      "--prefix",
      dir,
      "--no-save",
      "--no-package-lock",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      `${PACKAGE}@${VERSION}`,
    ],
    { stdio: ["ignore", "ignore", "inherit"], timeout: 600_000 },
  );
  if (npm.status !== 0) throw new Error(`npm install ${PACKAGE}@${VERSION} failed`);
  return join(dir, "node_modules", PACKAGE, "dist/index.js");
}

/** The server scenarios the installed version lists. */
function listedScenarios(cli) {
  const listed = spawnSync(process.execPath, [cli, "list", "--server"], { encoding: "utf8" });
  if (listed.status !== 0) throw new Error(`conformance list failed: ${listed.stderr}`);
  return [...listed.stdout.matchAll(/^\s+- (\S+)/gm)].map((match) => match[1]);
}

async function freePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  await once(server, "close");
  return port;
}

/** Resolves once the server's startup line shows; rejects if it exits or takes too long. */
function listening(server) {
  return new Promise((resolvePromise, reject) => {
    let output = "";
    const timer = setTimeout(
      () => reject(new Error(`receiptd serve did not listen:\n${output}`)),
      LISTEN_TIMEOUT_MS,
    );
    const read = (chunk) => {
      output += chunk;
      if (/Server listening at http/.test(output)) {
        clearTimeout(timer);
        resolvePromise();
      }
    };
    server.stdout.on("data", read);
    server.stderr.on("data", read);
    server.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`receiptd serve exited with ${code}:\n${output}`));
    });
  });
}

/** Runs one scenario; resolves to its checks and whether it passed. */
async function runScenario(cli, url, name, resultsDir) {
  const child = spawn(
    process.execPath,
    [cli, "server", "--url", url, "--scenario", name, "-o", resultsDir],
    { stdio: ["ignore", "pipe", "pipe"], timeout: SCENARIO_TIMEOUT_MS },
  );
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const [code] = await once(child, "exit");
  const dir = readdirSync(resultsDir).find((entry) => entry.startsWith(`server-${name}-`));
  const checks =
    dir === undefined ? [] : JSON.parse(readFileSync(join(resultsDir, dir, "checks.json"), "utf8"));
  const passed = code === 0 && checks.length > 0 && checks.every((c) => c.status === "SUCCESS");
  return { name, passed, checks, output };
}

async function conformance() {
  const cli = installConformance(values.dir);
  const listed = listedScenarios(cli);
  const known = [...Object.keys(APPLICABLE), ...Object.keys(NOT_APPLICABLE)];
  const unsorted = listed.filter((name) => !known.includes(name));
  const gone = known.filter((name) => !listed.includes(name));
  if (unsorted.length > 0 || gone.length > 0) {
    throw new Error(
      `${PACKAGE}@${VERSION} lists other scenarios than this script sorts: ` +
        `new ${JSON.stringify(unsorted)}, gone ${JSON.stringify(gone)}`,
    );
  }

  const dataDir = mkdtempSync(join(tmpdir(), "receiptd-mcp-conformance-"));
  const resultsDir = values.results ?? join(dataDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  // Embedded mode whatever the caller's environment says; the public origin is the one the
  // conformance client uses, as for a server run on one's own machine.
  const env = {
    ...process.env,
    DATA_DIR: join(dataDir, "data"),
    CPU_THREADS: "1",
    LOG_LEVEL: "info",
    PUBLIC_BASE_URL: origin,
  };
  for (const name of ["REDIS_URL", "DATABASE_URL", "HOST", "PORT", "X402_PAY_TO"]) delete env[name];
  for (const name of ["METRICS_PORT", "MCP_ALLOWED_ORIGINS"]) delete env[name];
  const server = spawn(
    process.execPath,
    [RECEIPTD, "serve", "--host", "127.0.0.1", "--port", String(port)],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  const results = [];
  let failure;
  try {
    await listening(server);
    for (const name of Object.keys(APPLICABLE)) {
      results.push(await runScenario(cli, `${origin}/mcp`, name, resultsDir));
    }
  } catch (error) {
    failure = error;
  }
  if (server.exitCode === null && server.signalCode === null) {
    server.kill("SIGTERM");
    const [code] = await once(server, "exit");
    if (code !== 0) failure ??= new Error(`receiptd serve exited with ${code} on SIGTERM`);
  }
  if (values.results === undefined) rmSync(dataDir, { recursive: true, force: true });
  if (failure !== undefined) throw failure;
  return results;
}

try {
  const results = await conformance();
  for (const result of results) {
    const word = result.passed ? "pass" : "FAIL";
    console.log(`mcp-conformance: ${word} ${result.name} (${result.checks.length} checks)`);
    if (!result.passed) {
      for (const check of result.checks.filter((c) => c.status !== "SUCCESS")) {
        console.log(`  ${check.status} ${check.id}: ${check.errorMessage ?? ""}`);
      }
      if (result.checks.length === 0) console.log(result.output);
    }
  }
  const passed = results.filter((result) => result.passed).length;
  console.log(
    `mcp-conformance: node ${process.version}, ${PACKAGE}@${VERSION}: ${passed} of ` +
      `${results.length} applicable server scenarios passed; ` +
      `${Object.keys(NOT_APPLICABLE).length} do not apply (docs/mcp.md)`,
  );
  if (passed !== results.length) process.exitCode = 1;
} catch (error) {
  console.error(`mcp-conformance: node ${process.version}: ${error.message ?? error}`);
  process.exitCode = 1;
}
