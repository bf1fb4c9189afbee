/** The audit directory's housekeeping (issue 37): compression of closed days, retention, readers. */
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import {
  auditDirectoryBytes,
  compactAuditDir,
  firstRetainedDay,
  isClosedDay,
  listAuditDays,
  readAuditFileLines,
} from "../../src/access/audit-files.js";

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "receiptd-audit-files-"));
});
afterEach(() => rm(directory, { recursive: true, force: true }));

const at = (text: string) => Date.parse(text);

async function linesOfDirectory(): Promise<string[]> {
  const lines: string[] = [];
  for (const day of await listAuditDays(directory)) {
    for (const path of day.paths)
      for await (const line of readAuditFileLines(path)) lines.push(line);
  }
  return lines;
}

describe("closed days and retention", () => {
  test("a day is closed an hour after its UTC midnight", () => {
    assert.equal(isClosedDay("2026-11-28", at("2026-11-29T00:59:59Z")), false);
    assert.equal(isClosedDay("2026-11-28", at("2026-11-29T01:00:00Z")), true);
    assert.equal(isClosedDay("2026-11-29", at("2026-11-29T23:00:00Z")), false);
  });

  test("62 days keep the whole previous month on every day of the next", () => {
    // The longest reach back: the last day of a 31-day month, billing a 31-day month.
    assert.equal(firstRetainedDay(at("2026-08-31T23:59:59Z"), 62), "2026-06-30");
    assert.ok((firstRetainedDay(at("2026-08-31T23:59:59Z"), 62) as string) <= "2026-07-01");
    assert.equal(firstRetainedDay(at("2026-08-31T12:00:00Z"), 0), null);
  });
});

describe("compactAuditDir", () => {
  test("compresses closed days atomically, leaves today and the open grace hour alone", async () => {
    await writeFile(join(directory, "2026-11-27.jsonl"), "a\nb\n");
    await writeFile(join(directory, "2026-11-28.jsonl"), "c\n");
    await writeFile(join(directory, "2026-11-29.jsonl"), "d\n");
    const report = await compactAuditDir(directory, {
      retentionDays: 62,
      nowMs: at("2026-11-29T00:30:00Z"),
    });
    assert.deepEqual(report.compressed, ["2026-11-27"]);
    assert.deepEqual((await readdir(directory)).sort(), [
      "2026-11-27.jsonl.gz",
      "2026-11-28.jsonl",
      "2026-11-29.jsonl",
    ]);
    assert.equal(
      gunzipSync(await readFile(join(directory, "2026-11-27.jsonl.gz"))).toString(),
      "a\nb\n",
    );
    assert.equal((await stat(join(directory, "2026-11-27.jsonl.gz"))).mode & 0o777, 0o600);
    assert.equal(report.bytes, await auditDirectoryBytes(directory));
  });

  test("removes days before the retention, compressed or not; 0 keeps every day", async () => {
    // 62 days before 2026-11-29 is 2026-09-28: the first day kept.
    await writeFile(join(directory, "2026-09-26.jsonl"), "old\n");
    await writeFile(join(directory, "2026-09-27.jsonl.gz"), gzipSync("old\n"));
    await writeFile(join(directory, "2026-09-28.jsonl"), "kept\n");
    await writeFile(join(directory, "notes.txt"), "not a day file\n");
    const nowMs = at("2026-11-29T12:00:00Z");
    const kept = await compactAuditDir(directory, { retentionDays: 0, nowMs, dryRun: true });
    assert.deepEqual(kept.removed, []);
    const dry = await compactAuditDir(directory, { retentionDays: 62, nowMs, dryRun: true });
    assert.deepEqual(dry.removed, ["2026-09-26", "2026-09-27"]);
    assert.deepEqual(dry.compressed, ["2026-09-28"]);
    assert.equal((await readdir(directory)).length, 4, "a dry run changes nothing");
    const report = await compactAuditDir(directory, { retentionDays: 62, nowMs });
    assert.deepEqual(report.removed, ["2026-09-26", "2026-09-27"]);
    assert.deepEqual((await readdir(directory)).sort(), ["2026-09-28.jsonl.gz", "notes.txt"]);
  });

  test("lines written after a day was compressed are appended as a second gzip member", async () => {
    await writeFile(join(directory, "2026-11-01.jsonl"), "a\n");
    const nowMs = at("2026-11-29T12:00:00Z");
    await compactAuditDir(directory, { retentionDays: 62, nowMs });
    await writeFile(join(directory, "2026-11-01.jsonl"), "late\n");
    assert.deepEqual(await linesOfDirectory(), ["a", "late"], "readers see both files");
    const report = await compactAuditDir(directory, { retentionDays: 62, nowMs });
    assert.deepEqual(report.compressed, ["2026-11-01"]);
    assert.deepEqual(await readdir(directory), ["2026-11-01.jsonl.gz"]);
    assert.deepEqual(await linesOfDirectory(), ["a", "late"]);
  });

  test("a plain file left beside its compressed copy (a crash before the removal) is read once and removed", async () => {
    const text = "a\nb\n";
    await writeFile(join(directory, "2026-11-01.jsonl.gz"), gzipSync(text));
    await writeFile(join(directory, "2026-11-01.jsonl"), text);
    assert.deepEqual(await listAuditDays(directory), [
      { day: "2026-11-01", paths: [join(directory, "2026-11-01.jsonl.gz")] },
    ]);
    assert.deepEqual(await linesOfDirectory(), ["a", "b"]);
    const report = await compactAuditDir(directory, {
      retentionDays: 62,
      nowMs: at("2026-11-29T12:00:00Z"),
    });
    assert.equal(report.leftovers, 1);
    assert.deepEqual(report.compressed, []);
    assert.deepEqual(await readdir(directory), ["2026-11-01.jsonl.gz"]);
  });

  test("the leftover of a merge is recognised by the last member, not the whole file", async () => {
    await writeFile(
      join(directory, "2026-11-01.jsonl.gz"),
      Buffer.concat([gzipSync("a\n"), gzipSync("late\n")]),
    );
    await writeFile(join(directory, "2026-11-01.jsonl"), "late\n");
    assert.deepEqual(await linesOfDirectory(), ["a", "late"]);
  });

  test("two compactions at once compress each day once", async () => {
    const lines = Array.from({ length: 5000 }, (_, index) => `line ${index}\n`).join("");
    await writeFile(join(directory, "2026-11-01.jsonl"), lines);
    await writeFile(join(directory, "2026-11-02.jsonl"), lines);
    const options = { retentionDays: 62, nowMs: at("2026-11-29T12:00:00Z") };
    await Promise.all([compactAuditDir(directory, options), compactAuditDir(directory, options)]);
    assert.deepEqual((await readdir(directory)).sort(), [
      "2026-11-01.jsonl.gz",
      "2026-11-02.jsonl.gz",
    ]);
    assert.equal((await linesOfDirectory()).length, 10_000);
  });

  test("an empty closed day is removed; a stale temporary file too, a young one kept", async () => {
    await writeFile(join(directory, "2026-11-01.jsonl"), "");
    const stale = join(directory, ".2026-11-02.jsonl.gz.1-abc.tmp");
    const young = join(directory, ".2026-11-03.jsonl.gz.2-def.tmp");
    await writeFile(stale, "partial");
    await writeFile(young, "partial");
    const nowMs = Date.now();
    await utimes(stale, new Date(nowMs - 2 * 3600_000), new Date(nowMs - 2 * 3600_000));
    await compactAuditDir(directory, { retentionDays: 0, nowMs });
    assert.deepEqual(await readdir(directory), [".2026-11-03.jsonl.gz.2-def.tmp"]);
  });

  test("a missing directory is an empty one", async () => {
    const report = await compactAuditDir(join(directory, "none"), {
      retentionDays: 62,
      nowMs: Date.now(),
    });
    assert.deepEqual([report.compressed, report.removed, report.bytes], [[], [], 0]);
    assert.equal(await auditDirectoryBytes(join(directory, "none")), 0);
  });
});

describe("readers", () => {
  test("a month prefix selects its days; CRLF and a last line without newline are read", async () => {
    await writeFile(join(directory, "2026-10-31.jsonl"), "october\n");
    await writeFile(join(directory, "2026-11-01.jsonl.gz"), gzipSync("one\r\ntwo"));
    const days = await listAuditDays(directory, "2026-11-");
    assert.deepEqual(
      days.map((day) => day.day),
      ["2026-11-01"],
    );
    const lines: string[] = [];
    for await (const line of readAuditFileLines(days[0]?.paths[0] as string)) lines.push(line);
    assert.deepEqual(lines, ["one", "two"]);
  });

  test("a damaged compressed file is an error, not a short day", async () => {
    await writeFile(join(directory, "2026-11-01.jsonl.gz"), gzipSync("a\n").subarray(0, 12));
    await assert.rejects(async () => {
      for await (const _ of readAuditFileLines(join(directory, "2026-11-01.jsonl.gz"))) {
        // reading is the test
      }
    }, /unexpected end of file/);
  });
});
