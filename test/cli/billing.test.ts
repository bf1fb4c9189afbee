/** `receiptd billing` as an operator runs it: a child process reading DATA_DIR's audit files. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { KeyStore } from "../../src/access/api-keys.js";
import { type AuditEvent, formatAuditLine } from "../../src/access/audit.js";
import type { Principal } from "../../src/access/principal.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
const UNKNOWN_ID = "cccccccccccc";

function auditLines(day: string, principal: Principal, status: number, count: number): string {
  const event: AuditEvent = {
    principal,
    method: "POST",
    route: "/verify",
    status,
    bytes: 100,
    latencyMs: 2,
  };
  return formatAuditLine(event, Date.parse(`${day}T09:30:00Z`)).repeat(count);
}

describe("receiptd billing", () => {
  let dataDir: string;
  let acmeId: string;
  let betaId: string;
  let evaluationId: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-cli-billing-"));
    const store = new FsDocumentStore(dataDir);
    const keys = new KeyStore(store, { defaultDailyCap: 1000 });
    acmeId = (await keys.create({ name: "acme", plan: "pro" })).record.id;
    betaId = (await keys.create({ name: "beta" })).record.id;
    evaluationId = (await keys.createEvaluation({ dailyCap: 100, lifetimeMs: 86_400_000 })).record
      .id;
    await store.close();
    const audit = join(dataDir, "audit");
    await mkdir(audit);
    await writeFile(
      join(audit, "2026-11-03.jsonl"),
      auditLines("2026-11-03", `key:${acmeId}`, 200, 12_000) +
        auditLines("2026-11-03", `key:${acmeId}`, 429, 3) +
        auditLines("2026-11-03", `key:${betaId}`, 201, 9) +
        auditLines("2026-11-03", "anonymous", 200, 50) +
        // A self-served evaluation key, used far past what a key would be billed for.
        auditLines("2026-11-03", `eval:${evaluationId}`, 200, 15_000) +
        auditLines("2026-11-03", `eval:${evaluationId}`, 429, 2),
    );
    await writeFile(
      join(audit, "2026-11-30.jsonl"),
      auditLines("2026-11-30", `key:${acmeId}`, 204, 350) +
        auditLines("2026-11-30", `key:${UNKNOWN_ID}`, 200, 10) +
        auditLines("2026-11-30", "x402:0xabcdef0123456789abcdef0123456789abcdef01", 200, 20),
    );
    await writeFile(
      join(audit, "2026-12-01.jsonl"),
      auditLines("2026-12-01", `key:${acmeId}`, 200, 99),
    );
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  function billing(args: string[], env: Record<string, string> = {}) {
    const result = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "billing", ...args], {
      encoding: "utf8",
      env: { ...process.env, DATA_DIR: dataDir, AUDIT_DIR: "", ...env },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  test("prints the month's statement: 2xx key calls, half-up cents, names from the store", () => {
    const out = billing(["--month", "2026-11"]);
    assert.equal(out.status, 0, out.stderr);
    assert.equal(out.stderr, "");
    const row = (cells: string[]) => {
      const [id = "", name = "", plan = "", calls = "", unbilled = "", amount = ""] = cells;
      return `${id.padEnd(12)}  ${name.padEnd(4)}  ${plan.padEnd(8)}  ${calls.padStart(5)}  ${unbilled.padStart(8)}  ${amount.padStart(10)}`.trimEnd();
    };
    const keyRows = [
      [acmeId, "acme", "pro", "12350", "3", "6.18"],
      [betaId, "beta", "standard", "9", "0", "0.00"],
      [UNKNOWN_ID, "-", "-", "10", "0", "0.01"],
    ].sort(([a = ""], [b = ""]) => (a < b ? -1 : 1));
    assert.equal(
      out.stdout,
      [
        "Statement for 2026-11 (5.00 USD per 10,000 successful calls)",
        row(["KEY ID", "NAME", "PLAN", "CALLS", "UNBILLED", "AMOUNT USD"]),
        ...keyRows.map(row),
        row(["TOTAL", "", "", "12369", "", "6.19"]),
        "Evaluation keys (never billed): 1 key(s), 15000 call(s), 2 unbilled",
        "CALLS: the key's successful (2xx) calls, billed. UNBILLED: its refused or failed calls " +
          "(429 and other 4xx, 5xx), counted but never billed.",
        "",
      ].join("\n"),
    );
    assert.ok(!out.stdout.includes(evaluationId), "an evaluation key has no line of its own");
  });

  test("--json: evaluation keys are tallied apart, at 0.00", () => {
    const out = billing(["--month", "2026-11", "--json"]);
    assert.equal(out.status, 0, out.stderr);
    const statement = JSON.parse(out.stdout);
    assert.deepEqual(statement.evaluation, { keys: 1, calls: 15_000, unbilled: 2, amount: "0.00" });
    assert.deepEqual(statement.total, { calls: 12_369, amount: "6.19" });
    assert.ok(statement.keys.every((line: { id: string }) => line.id !== evaluationId));
  });

  test("--json, and --audit pointing elsewhere", async () => {
    const out = billing(["--month", "2026-12", "--json"]);
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout), {
      month: "2026-12",
      currency: "USD",
      rate: { calls: 10_000, amount: "5.00" },
      keys: [{ id: acmeId, name: "acme", plan: "pro", calls: 99, unbilled: 0, amount: "0.05" }],
      total: { calls: 99, amount: "0.05" },
      evaluation: { keys: 0, calls: 0, unbilled: 0, amount: "0.00" },
      skipped_lines: 0,
    });

    const elsewhere = join(dataDir, "elsewhere");
    await mkdir(elsewhere);
    await writeFile(
      join(elsewhere, "2026-12-31.jsonl"),
      auditLines("2026-12-31", `key:${UNKNOWN_ID}`, 500, 2),
    );
    for (const run of [
      billing(["--month", "2026-12", "--json", "--audit", elsewhere]),
      billing(["--month", "2026-12", "--json"], { AUDIT_DIR: elsewhere }),
    ]) {
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.stdout).keys, [
        { id: UNKNOWN_ID, name: null, plan: null, calls: 0, unbilled: 2, amount: "0.00" },
      ]);
    }
  });

  test("usage and I/O errors exit 2", () => {
    for (const args of [[], ["--month", "2026-13"], ["--month", "2026-11", "--nope"]]) {
      const out = billing(args);
      assert.equal(out.status, 2, args.join(" "));
      assert.match(out.stderr, /usage: receiptd billing --month YYYY-MM/);
    }
    const missing = billing(["--month", "2026-11", "--audit", join(dataDir, "no-such-dir")]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /^error: cannot read the audit files in .*no-such-dir: ENOENT/);
  });
});
