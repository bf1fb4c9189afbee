/**
 * `receiptd audit compact` as an operator runs it (issue 37): a child process over DATA_DIR's
 * audit files, then `receiptd billing` reading the compressed days.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { formatAuditLine } from "../../src/access/audit.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
const DAY_MS = 24 * 3600_000;

const dayBefore = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);

function keyLines(day: string, count: number): string {
  return formatAuditLine(
    {
      principal: "key:aaaaaaaaaaaa",
      method: "POST",
      route: "/verify",
      status: 200,
      bytes: 9,
      latencyMs: 1,
    },
    Date.parse(`${day}T09:30:00Z`),
  ).repeat(count);
}

describe("receiptd audit compact", () => {
  let dataDir: string;
  let audit: string;
  const old = dayBefore(70);
  const closed = dayBefore(3);
  const today = dayBefore(0);
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-cli-audit-"));
    audit = join(dataDir, "audit");
    await mkdir(audit);
    await writeFile(join(audit, `${old}.jsonl`), keyLines(old, 5));
    await writeFile(join(audit, `${closed}.jsonl`), keyLines(closed, 20_000));
    await writeFile(join(audit, `${today}.jsonl`), keyLines(today, 3));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  function receiptd(args: string[], env: Record<string, string> = {}) {
    const result = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, ...args], {
      encoding: "utf8",
      env: { ...process.env, DATA_DIR: dataDir, AUDIT_DIR: "", AUDIT_RETENTION_DAYS: "", ...env },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  test("--dry-run reports and changes nothing; then closed days are compressed, old ones removed", async () => {
    const before = (await readdir(audit)).sort();
    const dry = receiptd(["audit", "compact", "--dry-run"]);
    assert.equal(dry.status, 0, dry.stderr);
    const dryReport = JSON.parse(dry.stdout) as Record<string, unknown>;
    assert.deepEqual(
      [dryReport.dry_run, dryReport.retention_days, dryReport.removed, dryReport.compressed],
      [true, 62, [old], [closed]],
    );
    assert.deepEqual((await readdir(audit)).sort(), before);

    const run = receiptd(["audit", "compact"]);
    assert.equal(run.status, 0, run.stderr);
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.deepEqual([report.removed, report.compressed], [[old], [closed]]);
    assert.deepEqual(
      (await readdir(audit)).sort(),
      [`${closed}.jsonl.gz`, `${today}.jsonl`].sort(),
    );
    assert.ok(
      (report.bytes as number) < keyLines(closed, 20_000).length / 10,
      String(report.bytes),
    );

    // Billing reads the compressed day: all 20,000 calls of the closed day, if in this month.
    const month = closed.slice(0, 7);
    const billing = receiptd(["billing", "--month", month, "--json"]);
    assert.equal(billing.status, 0, billing.stderr);
    const statement = JSON.parse(billing.stdout) as { total: { calls: number } };
    const expected = 20_000 + (today.startsWith(month) ? 3 : 0);
    assert.equal(statement.total.calls, expected);
  });

  test("AUDIT_RETENTION_DAYS=0 keeps every day; usage errors exit 2", async () => {
    await writeFile(join(audit, `${old}.jsonl`), keyLines(old, 1));
    const kept = receiptd(["audit", "compact"], { AUDIT_RETENTION_DAYS: "0" });
    assert.equal(kept.status, 0, kept.stderr);
    assert.deepEqual(JSON.parse(kept.stdout).compressed, [old]);
    assert.ok((await readdir(audit)).includes(`${old}.jsonl.gz`));
    assert.equal(receiptd(["audit"]).status, 2);
    assert.match(receiptd(["audit", "prune"]).stderr, /unknown command 'prune'/);
    const bad = receiptd(["audit", "compact"], { AUDIT_RETENTION_DAYS: "two months" });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /AUDIT_RETENTION_DAYS must be a whole number/);
  });
});
