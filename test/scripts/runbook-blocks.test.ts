/**
 * The runbook's shell blocks, run as written (issue 37: the teardown block set its variables
 * on its first line only, and the backup made the archive of private keys world-readable).
 * Every ```` ```sh ```` block of docs/operations.md runs in order, each in a fresh
 * `bash -euo pipefail` (a new terminal: none of the suite's environment), all in one folder
 * where the package is installed, as an operator's are. An HTML comment on the line before a
 * block says how to run it:
 *
 * - `<!-- runbook-test: background -->`: long-running (`receiptd serve`, `receiptd worker`):
 *   started in a process group of its own and waited for until it says it is ready;
 * - `<!-- runbook-test: stop -->`: the background blocks are stopped first (SIGTERM, as
 *   Ctrl-C), as the runbook tells the reader to;
 * - `<!-- runbook-test: skip: why -->`: not run; the reason is printed (only what would
 *   change the machine: a system account, services).
 *
 * What differs from an operator's machine, and only this (SUBSTITUTIONS): the deployment's
 * paths, port, Redis prefix and PostgreSQL schema become private ones, and the Redis and
 * PostgreSQL URLs are the suite's. The installed package is the checkout, linked as
 * `node_modules/receiptd` with its bin (test/package/install.test.ts installs the real
 * tarball), and npm runs offline, so `npx receiptd` can only be that one.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { freePort } from "../../bench/support/free-port.js";
import { keysUnder, SHARED_REDIS_URL } from "../redis/support.js";
import { DATABASE_URL, dropSchema, withAdmin } from "../support/pg.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
const RUNBOOK = "docs/operations.md";
const READY = /Server listening at http|"msg":"worker ready"/;
const READY_TIMEOUT_MS = 120_000;
const BLOCK_TIMEOUT_MS = 120_000;

type Mode = "run" | "background" | "stop" | "skip";

interface ShellBlock {
  /** 1-based line of the opening fence in the runbook. */
  line: number;
  /** The info string's name (```` ```sh runbook-backup ````), when it has one. */
  name: string | undefined;
  mode: Mode;
  /** Why a `skip` block is not run. */
  reason: string | undefined;
  code: string;
}

/** The runbook's ```` ```sh ```` blocks in order, with the marker on the line before each. */
function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  for (let at = 0; at < lines.length; at++) {
    const fence = /^```(\S*)(?: (\S+))?$/.exec(lines[at]!);
    if (fence === null) continue;
    const end = lines.indexOf("```", at + 1);
    assert.ok(end > at, `${RUNBOOK}:${at + 1}: a fence that is not closed`);
    if (fence[1] === "sh") {
      const marker = /^<!-- runbook-test: (\w+)(?:: (.*?))? -->$/.exec(lines[at - 1] ?? "");
      const mode = (marker?.[1] ?? "run") as Mode;
      assert.ok(
        ["background", "stop", "skip"].includes(mode) || marker === null,
        `${RUNBOOK}:${at}: unknown marker '${marker?.[1]}'`,
      );
      blocks.push({
        line: at + 1,
        name: fence[2],
        mode,
        reason: marker?.[2],
        code: lines.slice(at + 1, end).join("\n"),
      });
    }
    at = end;
  }
  return blocks;
}

const scratch = mkdtempSync(join(tmpdir(), "receiptd-runbook-blocks-"));
/** The operator's folder: the package installed in it, every block run in it. */
const installation = join(scratch, "opt");
const dataDir = join(scratch, "var-lib-receiptd");
const unitsDir = join(scratch, "etc-systemd-system");
const suffix = randomBytes(5).toString("hex");
const prefix = `receiptd-test-runbook-${suffix}`;
const schema = `receiptd_test_runbook_${suffix}`;
const identity = ["service-key.pem", "validator-key.hex", "internal.token"];

/** What a fresh terminal has: a PATH (this test's node first), a HOME, nothing of the suite. */
const freshShell: NodeJS.ProcessEnv = {
  PATH: `${dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  HOME: process.env.HOME ?? scratch,
  LANG: "C.UTF-8",
  TMPDIR: join(scratch, "tmp"),
  // `npx receiptd` must find the installed package; online, a missing one would be fetched.
  npm_config_offline: "true",
  npm_config_update_notifier: "false",
};

/** [runbook text, what replaces it, why]. */
function substitutions(port: number): [string, string, string][] {
  return [
    ["/var/lib/receiptd", dataDir, "the deployment's DATA_DIR: the machine's is no test's"],
    ["/etc/systemd/system", unitsDir, "the units are written, not installed"],
    ["127.0.0.1:8080", `127.0.0.1:${port}`, "a free port, beside anything else running"],
    ["PORT=8080", `PORT=${port}`, "the same port, as the web process's setting"],
    ["redis://127.0.0.1:6379", SHARED_REDIS_URL, "the suite's Redis"],
    ["postgres://postgres@127.0.0.1:5432/postgres", DATABASE_URL, "the suite's database"],
    ["receiptd-local", prefix, "a Redis prefix (and DATA_DIR, env file) of this test's own"],
    ["receiptd_local", schema, "a PostgreSQL schema of this test's own"],
  ];
}

interface Background {
  child: ChildProcess;
  log: string;
}
const running: Background[] = [];

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM to each background block's process group, then waits until every member is gone. */
async function stopBackground(): Promise<void> {
  for (const { child } of running) {
    if (child.pid !== undefined && groupAlive(child.pid)) process.kill(-child.pid, "SIGTERM");
  }
  for (const { child } of running.splice(0)) {
    for (let waited = 0; child.pid !== undefined && groupAlive(child.pid); waited += 100) {
      if (waited >= 60_000) process.kill(-child.pid, "SIGKILL");
      await sleep(100);
    }
  }
}

function shell(code: string, log: string) {
  writeFileSync(log, "");
  return spawn("bash", ["-euo", "pipefail", "-c", `exec >>${JSON.stringify(log)} 2>&1\n${code}`], {
    cwd: installation,
    env: freshShell,
    detached: true,
    stdio: "ignore",
  });
}

/** Runs a block to its end; its output (stdout and stderr). */
async function runBlock(code: string, log: string): Promise<string> {
  const child = shell(code, log);
  const timer = setTimeout(
    () => child.pid && process.kill(-child.pid, "SIGKILL"),
    BLOCK_TIMEOUT_MS,
  );
  const [status] = (await once(child, "exit")) as [number | null];
  clearTimeout(timer);
  const output = readFileSync(log, "utf8");
  assert.equal(status, 0, `the block exited with ${status}:\n${code}\n---\n${output}`);
  return output;
}

/** Starts a long-running block; its output once it says it is ready. */
async function startBlock(code: string, log: string): Promise<string> {
  const child = shell(code, log);
  running.push({ child, log });
  for (let waited = 0; waited < READY_TIMEOUT_MS; waited += 100) {
    const written = readFileSync(log, "utf8");
    // Whole lines only: the ready line is read once it is complete.
    const output = written.slice(0, written.lastIndexOf("\n") + 1);
    if (READY.test(output)) return output;
    if (child.exitCode !== null) {
      assert.fail(`the block exited with ${child.exitCode} before it was ready:\n${output}`);
    }
    await sleep(100);
  }
  return assert.fail(
    `the block was not ready in ${READY_TIMEOUT_MS} ms:\n${readFileSync(log, "utf8")}`,
  );
}

/** The JSON log line of `output` whose `msg` matches. */
function logLine(output: string, msg: RegExp): Record<string, unknown> {
  // Only whole lines: the last one may still be being written.
  for (const line of output.split("\n").slice(0, -1)) {
    if (!line.startsWith("{")) continue;
    const entry = JSON.parse(line) as Record<string, unknown>;
    if (msg.test(String(entry.msg))) return entry;
  }
  return assert.fail(`no log line ${msg} in:\n${output}`);
}

async function countKeys(): Promise<number> {
  const client = new Redis(SHARED_REDIS_URL);
  try {
    return (await keysUnder(client, `${prefix}:`)).length;
  } finally {
    client.disconnect();
  }
}

async function schemaExists(): Promise<boolean> {
  const found = await withAdmin((client) =>
    client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]),
  );
  return found.rowCount === 1;
}

/** The fenced block of the runbook whose info string is `ini <name>`. */
function iniBlock(runbook: string, name: string): string {
  const match = new RegExp(
    `^\`\`\`ini ${name.replace(/\./g, "\\.")}\\n([\\s\\S]*?)^\`\`\`$`,
    "m",
  ).exec(runbook);
  assert.ok(match?.[1] !== undefined, `${RUNBOOK} has a \`\`\`ini ${name} block`);
  return match[1];
}

/**
 * What each named block must have done, beyond exiting 0, and what it needs first that a
 * deployment would already have.
 */
const originalIdentity = new Map<string, Buffer>();
let webIssuer: unknown;
const checks: Record<
  string,
  { before?: () => Promise<void> | void; after?: (output: string) => Promise<void> | void }
> = {
  "runbook-local-web": {
    after(output) {
      const listening = logLine(output, /^Server listening at /);
      assert.equal(listening.mode, "distributed", "the environment file was loaded");
      webIssuer = listening.issuer;
    },
  },
  "runbook-local-worker": {
    after(output) {
      const ready = logLine(output, /^worker ready$/);
      assert.equal(ready.issuer, webIssuer, "the worker signs as the web process does");
    },
  },
  "runbook-payment-receipts": {
    after(output) {
      const [stored, served] = output
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.equal(stored?.stored, true, output);
      const receipt = stored?.receipt as Record<string, unknown>;
      assert.equal(receipt.kind, "svc.payment-receipt");
      assert.equal(receipt.tx, stored?.tx);
      assert.equal(receipt.issuer, webIssuer);
      assert.deepEqual(served?.receipt, receipt, "GET /receipts/{tx} serves what was stored");
      assert.equal(served?.receipt_digest, stored?.digest);
    },
  },
  "runbook-systemd-units": {
    async after() {
      const runbook = readFileSync(join(ROOT, RUNBOOK), "utf8");
      const written = readdirSync(unitsDir).sort();
      assert.deepEqual(written, ["receiptd-web.service", "receiptd-worker.service"]);
      for (const name of written) {
        const text = readFileSync(join(unitsDir, name), "utf8");
        // Units for the installation they were made in: its files, its documentation.
        const workingDirectory = /^WorkingDirectory=(.*)$/m.exec(text)?.[1];
        assert.equal(workingDirectory, ROOT, `${name} runs the installed package`);
        const documentation = /^Documentation=file:\/\/(.*)$/m.exec(text)?.[1];
        assert.ok(documentation !== undefined && existsSync(documentation), documentation);
        const script = / (dist\/\S+\.js) /.exec(/^ExecStart=(.*)$/m.exec(text)?.[1] ?? "")?.[1];
        assert.ok(script !== undefined && existsSync(join(ROOT, script)), `${name}: ${script}`);
        // The runbook shows them for a checkout in /opt/receiptd.
        assert.equal(text.replaceAll(ROOT, "/opt/receiptd"), iniBlock(runbook, name), name);
      }
    },
  },
  "runbook-backup": {
    before() {
      mkdirSync(dataDir, { mode: 0o700 });
      for (const name of identity) {
        const bytes = randomBytes(32);
        originalIdentity.set(name, bytes);
        writeFileSync(join(dataDir, name), bytes, { mode: 0o600 });
      }
      // An earlier backup, readable by all: the new one must not inherit its mode.
      writeFileSync(join(installation, "receiptd-identity.tar.gz"), "old", { mode: 0o644 });
      chmodSync(join(installation, "receiptd-identity.tar.gz"), 0o644);
    },
    after() {
      const archive = statSync(join(installation, "receiptd-identity.tar.gz"));
      assert.equal(archive.mode & 0o777, 0o600, "the archive of private keys is 0600");
    },
  },
  "runbook-restore": {
    before() {
      // DATA_DIR is lost.
      rmSync(dataDir, { recursive: true });
    },
    after() {
      assert.equal(statSync(dataDir).mode & 0o777, 0o700);
      for (const name of identity) {
        assert.deepEqual(readFileSync(join(dataDir, name)), originalIdentity.get(name), name);
        assert.equal(statSync(join(dataDir, name)).mode & 0o777, 0o600, name);
      }
    },
  },
  "runbook-teardown": {
    async before() {
      // What the local deployment left: the queues' keys, the store's schema.
      assert.ok((await countKeys()) > 0, `keys under ${prefix}:`);
      assert.ok(await schemaExists(), `schema ${schema}`);
    },
    async after(output) {
      assert.match(output, /^redis: would remove \d+ key\(s\)/m);
      assert.match(output, /^nothing removed: add --yes to remove it$/m);
      assert.match(output, /^redis: removed \d+ key\(s\)/m);
      assert.match(output, new RegExp(`^postgresql: dropped schema '${schema}'`, "m"));
      assert.equal(await countKeys(), 0);
      assert.equal(await schemaExists(), false);
    },
  },
};

describe("the runbook's shell blocks, each in a fresh shell", () => {
  let port = 0;
  let blocks: ShellBlock[] = [];

  before(async () => {
    port = await freePort();
    let runbook = readFileSync(join(ROOT, RUNBOOK), "utf8");
    for (const [text, replacement] of substitutions(port)) {
      runbook = runbook.replaceAll(text, replacement);
    }
    blocks = shellBlocks(runbook);
    mkdirSync(freshShell.TMPDIR!);
    // The package installed in the operator's folder, laid out as `npm install` lays it out.
    mkdirSync(join(installation, "node_modules/.bin"), { recursive: true });
    symlinkSync(ROOT, join(installation, "node_modules/receiptd"));
    for (const [name, path] of Object.entries(
      (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: object }).bin,
    )) {
      symlinkSync(join("../receiptd", path), join(installation, "node_modules/.bin", name));
    }
  });

  after(async () => {
    await stopBackground();
    const client = new Redis(SHARED_REDIS_URL);
    try {
      const left = await keysUnder(client, `${prefix}:`);
      if (left.length > 0) await client.unlink(...left);
    } finally {
      client.disconnect();
    }
    await dropSchema(schema);
    rmSync(scratch, { recursive: true, force: true });
  });

  test("finds the blocks, and a reason for each one it does not run", (t) => {
    const text = readFileSync(join(ROOT, RUNBOOK), "utf8");
    const markers = text.match(/^<!-- runbook-test:/gm)?.length ?? 0;
    const all = shellBlocks(text);
    assert.equal(
      all.filter((block) => block.mode !== "run").length,
      markers,
      "every marker is on the line before a sh block",
    );
    assert.deepEqual(
      all.map((block) => block.name ?? block.mode),
      [
        "run",
        "runbook-local-web",
        "runbook-local-worker",
        "runbook-payment-receipts",
        "skip",
        "runbook-systemd-units",
        "skip",
        "runbook-backup",
        "runbook-restore",
        "runbook-teardown",
        "skip",
      ],
    );
    for (const block of all.filter((candidate) => candidate.mode === "skip")) {
      assert.ok(
        (block.reason ?? "").length > 10,
        `${RUNBOOK}:${block.line} says why it is skipped`,
      );
      t.diagnostic(`${RUNBOOK}:${block.line} not run: ${block.reason}`);
    }
    for (const [text, replacement, why] of substitutions(port)) {
      t.diagnostic(`'${text}' → '${replacement}': ${why}`);
    }
  });

  test("runs them top to bottom: local web and worker, a settlement receipt, units, backup, restore, teardown", async (t) => {
    let index = 0;
    for (const block of blocks) {
      index += 1;
      const label = `${RUNBOOK}:${block.line} (${block.name ?? block.mode})`;
      if (block.mode === "skip") continue;
      const log = join(scratch, `block-${index}.log`);
      const check = block.name === undefined ? undefined : checks[block.name];
      if (block.mode === "stop") await stopBackground();
      await check?.before?.();
      const output =
        block.mode === "background"
          ? await startBlock(block.code, log)
          : await runBlock(block.code, log);
      await check?.after?.(output);
      t.diagnostic(`ran ${label}`);
    }
    for (const name of Object.keys(checks)) {
      assert.ok(
        blocks.some((block) => block.name === name),
        `${RUNBOOK} has the block ${name}`,
      );
    }
  });
});
