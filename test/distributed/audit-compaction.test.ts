/**
 * Audit housekeeping in distributed mode (issue 37): two web instances of one deployment
 * (shared Redis prefix, PostgreSQL schema and AUDIT_DIR) both compact the shared directory as
 * they start, at once; each closed day is compressed once, the old ones removed, today's left
 * plain, and billing reads every line; each instance's `receiptd_audit_bytes` is the directory.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { formatAuditLine } from "../../src/access/audit.js";
import { auditDirectoryBytes } from "../../src/access/audit-files.js";
import { meterMonth } from "../../src/access/billing.js";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../redis/support.js";
import { startTestService } from "../service/support/service.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";
import { parseExposition, sampleValue } from "../support/prometheus.js";

const NOW = Date.parse("2026-11-29T03:00:00Z");
const prefix = randomPrefix();
const schema = privateSchema();

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

describe("audit compaction in distributed mode", () => {
  after(async () => {
    const cleanup = await openTestRedis(prefix);
    const keys = await keysUnder(cleanup.client, prefix);
    if (keys.length > 0) await cleanup.client.unlink(...keys);
    await cleanup.close();
    await dropSchema(schema);
  });

  test("two instances sharing AUDIT_DIR compress each closed day once and keep billing whole", async () => {
    const shared = await mkdtemp(join(tmpdir(), "receiptd-audit-distributed-"));
    const auditDir = join(shared, "audit");
    await mkdir(auditDir);
    const internalTokenFile = join(shared, "internal.token");
    await writeFile(internalTokenFile, randomBytes(32).toString("hex"), { mode: 0o600 });
    // 2026-09-27 is past the 62 days kept on 2026-11-29; the others are kept.
    const days = ["2026-09-27", "2026-11-01", "2026-11-15", "2026-11-27", "2026-11-28"];
    for (const day of days) await writeFile(join(auditDir, `${day}.jsonl`), keyLines(day, 2000));
    await writeFile(join(auditDir, "2026-11-29.jsonl"), keyLines("2026-11-29", 7));
    const overrides = {
      redisUrl: SHARED_REDIS_URL,
      redisPrefix: prefix,
      databaseUrl: DATABASE_URL,
      databaseSchema: schema,
      internalTokenFile,
      auditDir,
    };
    const options = { clock: () => NOW };
    const [first, second] = await Promise.all([
      startTestService(overrides, options),
      startTestService(overrides, options),
    ]);
    try {
      assert.equal(first.config.redisUrl, SHARED_REDIS_URL, "distributed mode");
      await Promise.all([
        first.app.accessServices.audit.compact(),
        second.app.accessServices.audit.compact(),
      ]);
      assert.deepEqual((await readdir(auditDir)).sort(), [
        "2026-11-01.jsonl.gz",
        "2026-11-15.jsonl.gz",
        "2026-11-27.jsonl.gz",
        "2026-11-28.jsonl.gz",
        "2026-11-29.jsonl",
      ]);
      const usage = await meterMonth(auditDir, "2026-11");
      assert.equal(usage.totalCalls, 4 * 2000 + 7);
      // One more run each, one after the other: a run measures the directory when it ends,
      // which may be while the other instance's run still holds a temporary file.
      await first.app.accessServices.audit.compact();
      await second.app.accessServices.audit.compact();
      const bytes = await auditDirectoryBytes(auditDir);
      for (const instance of [first, second]) {
        const samples = parseExposition(await instance.app.metrics.render());
        assert.equal(sampleValue(samples, "receiptd_audit_bytes"), bytes);
      }
    } finally {
      await first.close();
      await second.close();
      await rm(shared, { recursive: true, force: true });
    }
  });
});
