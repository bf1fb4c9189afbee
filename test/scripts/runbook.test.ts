/**
 * docs/operations.md, the runbook, checked where it is not a shell block: the systemd units
 * are what `receiptd systemd-units` prints and pass `systemd-analyze verify`; the PostgreSQL
 * setup SQL, run under test-only names, gives a role that `.env.example`'s DATABASE_URL (with
 * the same names) can open the store with; the logrotate block rotates an access log a process
 * keeps appending to. Its shell blocks are run by runbook-blocks.test.ts.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { DEFAULTS, systemdUnits } from "../../src/cli/systemd-units.js";
import { PgDocumentStore } from "../../src/storage/pg-document-store.js";
import { DATABASE_URL, withAdmin } from "../support/pg.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const runbook = readFileSync(join(ROOT, "docs/operations.md"), "utf8");
const procfile = readFileSync(join(ROOT, "Procfile"), "utf8");
const scratch = mkdtempSync(join(tmpdir(), "receiptd-runbook-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The fenced block whose info string is `<language> <name>`. */
function block(language: string, name: string): string {
  const match = new RegExp(
    `^\`\`\`${language} ${name.replace(/\./g, "\\.")}\\n([\\s\\S]*?)^\`\`\`$`,
    "m",
  ).exec(runbook);
  assert.ok(match?.[1] !== undefined, `docs/operations.md has a \`\`\`${language} ${name} block`);
  return match[1];
}

function systemdAnalyze(units: string[], cwd: string) {
  return spawnSync("systemd-analyze", ["verify", "--man=no", ...units.map((u) => `./${u}`)], {
    cwd,
    encoding: "utf8",
  });
}

describe("the runbook's systemd units", () => {
  // The runbook shows the units of a checkout in /opt/receiptd.
  const units = systemdUnits(procfile, { ...DEFAULTS, dir: "/opt/receiptd" });

  test("are one per Procfile line, and docs/operations.md shows them as generated", () => {
    assert.deepEqual(Object.keys(units).sort(), [
      "receiptd-web.service",
      "receiptd-worker.service",
    ]);
    for (const [name, text] of Object.entries(units)) {
      assert.equal(block("ini", name), text, `${name} in docs/operations.md is stale`);
    }
    assert.match(
      units["receiptd-web.service"]!,
      /^ExecStart=\/usr\/bin\/node --max-semi-space-size=2 dist\/src\/cli\/receiptd\.js serve$/m,
    );
  });

  test("pass systemd-analyze verify (generated for this machine), and a broken one does not", () => {
    const found = spawnSync("systemd-analyze", ["--version"]);
    assert.equal(
      found.error,
      undefined,
      "systemd-analyze is needed (Debian: apt-get install systemd)",
    );
    const envFile = join(scratch, "receiptd.env");
    writeFileSync(envFile, "PORT=8080\n");
    const good = join(scratch, "units");
    mkdirSync(good);
    const options = { dir: ROOT, node: process.execPath, user: "receiptd", envFile };
    for (const [name, text] of Object.entries(systemdUnits(procfile, options))) {
      writeFileSync(join(good, name), text);
    }
    const verified = systemdAnalyze(Object.keys(units), good);
    assert.equal(verified.status, 0, verified.stderr);
    assert.equal(verified.stderr, "");

    const broken = join(scratch, "broken");
    mkdirSync(broken);
    const missing = { ...options, node: join(scratch, "no-such-node") };
    writeFileSync(
      join(broken, "receiptd-web.service"),
      systemdUnits(procfile, missing)["receiptd-web.service"]!,
    );
    const refused = systemdAnalyze(["receiptd-web.service"], broken);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /no-such-node is not executable/);
  });
});

describe("the runbook's PostgreSQL setup", () => {
  const suffix = randomBytes(5).toString("hex");
  const role = `receiptd_rb_${suffix}`;
  const database = `receiptd_rb_${suffix}`;
  after(async () => {
    await withAdmin(async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await client.query(`DROP ROLE IF EXISTS ${role}`);
    });
  });

  test("its SQL makes the role and database .env.example's DATABASE_URL opens the store with", async () => {
    // The runbook's names, made unique: the shared server must not get a real `receiptd`.
    const sql = block("sql", "runbook-postgresql").replace(/\breceiptd\b/g, role);
    const statements = sql
      .split(";")
      .map((text) => text.trim())
      .filter((text) => text !== "");
    assert.equal(statements.length, 2);
    await withAdmin(async (client) => {
      for (const statement of statements) await client.query(statement);
    });

    const example = /^# DATABASE_URL=(.*)$/m.exec(
      readFileSync(join(ROOT, ".env.example"), "utf8"),
    )?.[1];
    assert.equal(example, "postgres://receiptd:change-me@127.0.0.1:5432/receiptd");
    const url = new URL(example!.replace(/\breceiptd\b/g, role));
    const shared = new URL(DATABASE_URL);
    url.hostname = shared.hostname;
    url.port = shared.port;
    const store = await PgDocumentStore.open({ url: url.href, schema: "receiptd" });
    try {
      await store.create("anchors", "runbook", new TextEncoder().encode("{}"));
      assert.equal(Buffer.from((await store.get("anchors", "runbook"))!).toString(), "{}");
    } finally {
      await store.close();
    }
    const client = new pg.Client({ connectionString: url.href });
    await client.connect();
    try {
      const schema = await client.query<{ owner: string }>(
        "SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = 'receiptd'",
      );
      assert.deepEqual(schema.rows, [{ owner: role }], "receiptd created its schema as the role");
    } finally {
      await client.end();
    }
  });
});

describe("the runbook's logrotate block for the access log (issue 37)", () => {
  test("copytruncate rotates a file a process keeps appending to: old lines rotated, new ones in the live file", async () => {
    const logs = join(scratch, "logs");
    mkdirSync(logs, { mode: 0o755 });
    const config = join(scratch, "logrotate.conf");
    writeFileSync(
      config,
      block("conf", "logrotate-receiptd").replace("/var/log/receiptd/", `${logs}/`),
    );
    const live = join(logs, "web.log");
    // A stand-in for `receiptd serve` with StandardOutput=append: one descriptor, opened in
    // append mode, kept for the whole run; it writes a line per line it is told, and echoes.
    const writer = spawn(
      process.execPath,
      [
        "-e",
        `const fs = require("node:fs");
         const fd = fs.openSync(process.argv[1], "a");
         require("node:readline").createInterface({ input: process.stdin }).on("line", (n) => {
           fs.writeSync(fd, JSON.stringify({ msg: "request completed", n: Number(n) }) + "\\n");
           process.stdout.write(n + "\\n");
         });`,
        live,
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    const acks = createInterface({ input: writer.stdout })[Symbol.asyncIterator]();
    const write = async (from: number, to: number) => {
      for (let n = from; n <= to; n += 1) {
        writer.stdin.write(`${n}\n`);
        assert.equal((await acks.next()).value, String(n));
      }
    };
    const numbers = (path: string) =>
      readFileSync(path, "utf8")
        .trimEnd()
        .split("\n")
        .map((line) => (JSON.parse(line) as { n: number }).n);
    try {
      await write(1, 100);
      execFileSync("logrotate", ["--force", "--state", join(scratch, "logrotate.state"), config]);
      await write(101, 110);
      assert.deepEqual(
        numbers(join(logs, "web.log.1")),
        Array.from({ length: 100 }, (_, index) => index + 1),
      );
      // Append mode: the writer's next line lands at the new end, not at its old offset
      // (which would leave the live file a hole of zeros as large as the rotated one).
      assert.deepEqual(
        numbers(live),
        Array.from({ length: 10 }, (_, index) => index + 101),
      );
    } finally {
      writer.stdin.end();
      await once(writer, "exit");
    }
  });
});
