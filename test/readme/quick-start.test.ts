/**
 * The README's quick start, run as written (issue 14: its first `curl` answered 401). The
 * fenced blocks marked `sh quick-start` are taken from README.md in order and run in one bash
 * session from the repository root; `server` and `background` blocks are long-running: each is
 * started in its own process group and waited for until it prints that it listens, and a
 * `server` block stops the server before it, as the README tells the reader to.
 *
 * What differs from a reader's terminal, and only this: DATA_DIR and TMPDIR are private
 * directories, and the README's ports (8080, 4021) are replaced by free ones, so the test can
 * run beside anything else on the machine. The servers are the real `npm start` and
 * `npm run dev:facilitator`; the payment is made by the official x402 client SDK.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { freePort } from "../../bench/support/free-port.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const README_PORTS = { server: "127.0.0.1:8080", facilitator: "127.0.0.1:4021" } as const;

interface QuickStartBlock {
  kind: "run" | "server" | "background";
  code: string;
}

/** The quick-start blocks of a README, in order. */
function quickStartBlocks(readme: string): QuickStartBlock[] {
  const blocks: QuickStartBlock[] = [];
  for (const match of readme.matchAll(
    /^```sh quick-start( server| background)?\n([\s\S]*?)^```$/gm,
  )) {
    const kind =
      match[1] === " server" ? "server" : match[1] === " background" ? "background" : "run";
    blocks.push({ kind, code: match[2] ?? "" });
  }
  return blocks;
}

/** One bash script: run blocks inline, long-running ones in the background, each logged. */
function script(blocks: QuickStartBlock[], logs: string): string {
  const lines = [
    "set -euo pipefail",
    // Job control: each background block gets its own process group (npm and its node child).
    "set -m",
    "PIDS=()",
    // A process group is gone only when its last member is: npm exits at once, but the node
    // server it started drains and writes its last audit lines into DATA_DIR first. Waiting
    // for the whole group keeps those writes from recreating the removed temporary folder.
    "cleanup() {",
    `  for pid in "\${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done`,
    `  for pid in "\${PIDS[@]}"; do`,
    `    for _ in $(seq 1 300); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done`,
    `    kill -KILL -- "-$pid" 2>/dev/null || true`,
    "  done",
    "  wait || true",
    "}",
    "trap cleanup EXIT",
    "ready() {",
    "  for _ in $(seq 1 1200); do",
    `    if grep -qE 'listening (at|on) http' "$1"; then return 0; fi`,
    `    if ! kill -0 "$2" 2>/dev/null; then echo "exited before listening: $1" >&2; cat "$1" >&2; return 1; fi`,
    "    sleep 0.1",
    "  done",
    `  echo "never listened: $1" >&2; cat "$1" >&2; return 1`,
    "}",
    "SERVER=",
  ];
  blocks.forEach((block, index) => {
    lines.push(`# --- block ${index + 1} (${block.kind})`);
    if (block.kind === "run") {
      lines.push(block.code);
      return;
    }
    const log = join(logs, `block-${index + 1}.log`);
    if (block.kind === "server") {
      lines.push(
        `if [ -n "$SERVER" ]; then kill -TERM -- "-$SERVER"; while kill -0 "$SERVER" 2>/dev/null; do sleep 0.1; done; fi`,
      );
    }
    lines.push(`{\n${block.code}\n} > ${log} 2>&1 &`, "PIDS+=($!)");
    if (block.kind === "server") lines.push("SERVER=$!");
    lines.push(`ready ${log} $!`);
  });
  return `${lines.join("\n")}\n`;
}

describe("the README quick start", () => {
  let work: string;
  before(async () => {
    work = await mkdtemp(join(tmpdir(), "receiptd-quick-start-"));
  });
  after(async () => {
    await rm(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    // Issue 26: a server still exiting used to recreate it after the removal.
    await sleep(500);
    assert.equal(existsSync(work), false, `${work} is left behind`);
  });

  test("finds the five steps' blocks", async () => {
    const blocks = quickStartBlocks(await readFile(join(ROOT, "README.md"), "utf8"));
    assert.deepEqual(
      blocks.map((block) => block.kind),
      ["server", "run", "run", "run", "background", "server", "run"],
    );
  });

  test("runs top to bottom: key, verification, offline receipt check, x402 payment", async () => {
    const [serverPort, facilitatorPort] = [await freePort(), await freePort()];
    const readme = (await readFile(join(ROOT, "README.md"), "utf8"))
      .replaceAll(README_PORTS.server, `127.0.0.1:${serverPort}`)
      .replaceAll(README_PORTS.facilitator, `127.0.0.1:${facilitatorPort}`);
    const dataDir = join(work, "data");
    const child = spawn("bash", ["-c", script(quickStartBlocks(readme), work)], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        TMPDIR: work,
        PORT: String(serverPort),
        FACILITATOR_PEER_PORT: String(facilitatorPort),
        // A reader's shell has none of the suite's settings.
        REDIS_URL: "",
        DATABASE_URL: "",
        LOG_LEVEL: "info",
        RECEIPTD_URL: "",
        X402_PAY_TO: "",
        FACILITATOR_URL: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 0, `stdout:\n${stdout}\nstderr:\n${stderr}`);

    // 2: keys create said where its DATA_DIR is and that the server uses it, without warning.
    assert.match(stderr, new RegExp(`^DATA_DIR: ${dataDir}$`, "m"));
    assert.match(stderr, /^server: http:\/\/127\.0\.0\.1:\d+ \(pid \d+\) runs on this DATA_DIR$/m);
    assert.match(stderr, /signs with this DATA_DIR's service key/);
    assert.doesNotMatch(stderr, /warning/);
    // 3: the verdict with the key.
    assert.match(stdout, /"verdict":"TRUSTED"/);
    // 4: the receipt verified offline.
    assert.match(stdout, /"valid":\s*true/);
    // 5: paid with the SDK, settled through the facilitator stand-in.
    const paid = JSON.parse(stdout.slice(stdout.lastIndexOf("{\n"))) as Record<string, unknown>;
    assert.equal(paid.status, 200);
    assert.equal(paid.verdict, "TRUSTED");
    assert.match(String(paid.transaction), /^0x[0-9a-f]{64}$/);
    assert.equal(paid.network, "eip155:84532");
  });
});
