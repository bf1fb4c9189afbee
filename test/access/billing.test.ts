/** Metering a month of audit lines: 2xx key calls only, half-up cents, evaluation keys free. */
import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { type AuditEvent, formatAuditLine } from "../../src/access/audit.js";
import { amountCents, formatCents, isMonth, meterMonth } from "../../src/access/billing.js";

const A = "key:aaaaaaaaaaaa";
const B = "key:bbbbbbbbbbbb";
/** Evaluation keys: their lines carry a principal of their own. */
const E = "eval:eeeeeeeeeeee";
const F = "eval:ffffffffffff";

function lines(day: string, entries: [AuditEvent["principal"], number, number][]): string {
  const timeMs = Date.parse(`${day}T12:00:00Z`);
  return entries
    .flatMap(([principal, status, times]) =>
      Array.from({ length: times }, () =>
        formatAuditLine(
          { principal, status, method: "POST", route: "/verify", bytes: 1, latencyMs: 1 },
          timeMs,
        ),
      ),
    )
    .join("");
}

describe("billing amounts", () => {
  test("5.00 USD per 10,000 calls, rounded half up to the cent", () => {
    const cases: [number, number][] = [
      [0, 0],
      [9, 0],
      [10, 1],
      [29, 1],
      [30, 2],
      [10_000, 500],
      [12_345, 617],
      [12_350, 618],
      [1_000_000_000, 50_000_000],
    ];
    for (const [calls, cents] of cases) assert.equal(amountCents(calls), cents, String(calls));
  });

  test("cents print as dollars with two decimals", () => {
    assert.deepEqual([0, 5, 617, 123_456].map(formatCents), ["0.00", "0.05", "6.17", "1234.56"]);
  });

  test("months are YYYY-MM", () => {
    assert.deepEqual(
      ["2026-11", "2026-01", "2026-12", "2026-13", "2026-00", "2026-1", "26-11", "2026-11-01"].map(
        isMonth,
      ),
      [true, true, true, false, false, false, false, false],
    );
  });
});

describe("meterMonth", () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), "receiptd-billing-"));
    await writeFile(
      join(directory, "2026-11-01.jsonl"),
      lines("2026-11-01", [
        [A, 200, 3],
        [A, 201, 1],
        [A, 204, 1],
        [A, 429, 5],
        [A, 400, 1],
        [A, 401, 1],
        [A, 500, 1],
        [A, 304, 1],
        ["anonymous", 200, 7],
        ["x402:0xabcdef0123456789abcdef0123456789abcdef01", 200, 4],
        [E, 200, 20_000],
        [E, 429, 1],
      ]),
    );
    // A crash can leave a torn last line; it is skipped, not billed.
    await writeFile(
      join(directory, "2026-11-30.jsonl"),
      `${lines("2026-11-30", [
        [B, 200, 10],
        [A, 299, 1],
        [F, 201, 3],
      ])}{"time":"2026-11-30T12:00:00Z","princ`,
    );
    await writeFile(join(directory, "2026-10-31.jsonl"), lines("2026-10-31", [[A, 200, 100]]));
    await writeFile(join(directory, "2026-12-01.jsonl"), lines("2026-12-01", [[B, 200, 100]]));
    await writeFile(join(directory, "2026-11-notes.txt"), "not an audit file\n");
  });
  after(() => rm(directory, { recursive: true, force: true }));

  test("counts 2xx calls of keys in the month's files only", async () => {
    assert.deepEqual(await meterMonth(directory, "2026-11"), {
      month: "2026-11",
      keys: [
        { keyId: "aaaaaaaaaaaa", calls: 6, unbilled: 9, amountCents: 0 },
        { keyId: "bbbbbbbbbbbb", calls: 10, unbilled: 0, amountCents: 1 },
      ],
      totalCalls: 16,
      totalCents: 1,
      evaluation: { keys: 2, calls: 20_003, unbilled: 1 },
      files: ["2026-11-01.jsonl", "2026-11-30.jsonl"],
      skippedLines: 1,
    });
  });

  test("evaluation keys are never billed, however much they are used", async () => {
    const usage = await meterMonth(directory, "2026-11");
    // 20,003 successful calls would be 10.00 USD on a key; they are tallied, not priced.
    assert.equal(usage.evaluation.calls, 20_003);
    assert.ok(usage.keys.every((line) => !["eeeeeeeeeeee", "ffffffffffff"].includes(line.keyId)));
    assert.equal(usage.totalCents, 1);
  });

  test("a month without files is an empty statement", async () => {
    assert.deepEqual(await meterMonth(directory, "2025-02"), {
      month: "2025-02",
      keys: [],
      totalCalls: 0,
      totalCents: 0,
      evaluation: { keys: 0, calls: 0, unbilled: 0 },
      files: [],
      skippedLines: 0,
    });
  });

  test("a missing directory is an error, not an empty bill", async () => {
    await assert.rejects(meterMonth(join(directory, "absent"), "2026-11"), { code: "ENOENT" });
    await mkdir(join(directory, "empty"));
    assert.equal((await meterMonth(join(directory, "empty"), "2026-11")).keys.length, 0);
  });

  test("compressed days bill the same as plain ones, a crash's leftover once (issue 37)", async () => {
    const plainUsage = await meterMonth(directory, "2026-11");
    const compressed = join(directory, "compressed");
    await mkdir(compressed);
    for (const day of ["2026-11-01", "2026-11-30"]) {
      const text = await readFile(join(directory, `${day}.jsonl`));
      await writeFile(join(compressed, `${day}.jsonl.gz`), gzipSync(text));
    }
    // A compaction that crashed after its rename: the plain day is still there, and is
    // already the compressed file's last member.
    await copyFile(join(directory, "2026-11-30.jsonl"), join(compressed, "2026-11-30.jsonl"));
    const usage = await meterMonth(compressed, "2026-11");
    assert.deepEqual(usage, {
      ...plainUsage,
      files: ["2026-11-01.jsonl.gz", "2026-11-30.jsonl.gz"],
    });
    // A line written after its day was compressed is billed too.
    await writeFile(join(compressed, "2026-11-01.jsonl"), lines("2026-11-01", [[B, 200, 1]]));
    const late = await meterMonth(compressed, "2026-11");
    assert.equal(late.totalCalls, plainUsage.totalCalls + 1);
    assert.deepEqual(late.files, [
      "2026-11-01.jsonl.gz",
      "2026-11-01.jsonl",
      "2026-11-30.jsonl.gz",
    ]);
  });
});
