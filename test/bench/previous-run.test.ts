/** Ratios to the previous recorded run (bench/previous-run.ts) and how the report shows them. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  compareWithPrevious,
  newestRecordedRun,
  previousRunSummary,
  readRecordedRun,
} from "../../bench/previous-run.js";
import { renderMarkdownTable, renderTable } from "../../bench/report.js";
import type { BenchRun, ScenarioResult } from "../../bench/types.js";

function result(overrides: Partial<ScenarioResult>): ScenarioResult {
  return {
    scenario: "single",
    title: "single 6-receipt bundle",
    target: "receiptd (embedded)",
    connections: 16,
    requests: 1000,
    errors: 0,
    seconds: 10,
    requestsPerSecond: 100,
    unit: "bundles",
    itemsPerSecond: 100,
    latencyMs: { p50: 1, p95: 2, p99: 3, max: 4 },
    peakRssMiB: 200,
    ceilingRatio: 0.5,
    ...overrides,
  };
}

function benchRun(results: ScenarioResult[], startedAt: string): BenchRun {
  return {
    startedAt,
    quick: false,
    mode: "embedded",
    machine: { cpus: 2, cpuModel: "test", node: "v20", platform: "linux x64", memoryGiB: 8 },
    ceiling: {
      threads: 2,
      verificationsPerSecond: 24_000,
      bundlesPerSecond: 4000,
      signaturesPerBundle: 6,
    },
    results,
  };
}

const before = benchRun(
  [
    result({ itemsPerSecond: 1000, peakRssMiB: 300 }),
    result({ scenario: "batch-50", itemsPerSecond: 2000 }),
    result({ scenario: "single", target: "http://127.0.0.1:9", itemsPerSecond: 50 }),
  ],
  "2026-11-22T10:00:00.000Z",
);

describe("the previous recorded run", () => {
  test("is the newest JSON of the directory by name", () => {
    const directory = mkdtempSync(join(tmpdir(), "receiptd-previous-"));
    try {
      assert.equal(newestRecordedRun(directory), null);
      for (const name of ["2026-11-22-2-core.json", "2026-11-24-2-core.json", "notes.md"]) {
        writeFileSync(join(directory, name), JSON.stringify(before));
      }
      writeFileSync(join(directory, "2026-11-23-2-core.json"), JSON.stringify(before));
      assert.equal(newestRecordedRun(directory), join(directory, "2026-11-24-2-core.json"));
      assert.deepEqual(readRecordedRun(join(directory, "2026-11-24-2-core.json")), before);
      writeFileSync(join(directory, "2026-11-25-x.json"), "{}");
      assert.throws(
        () => readRecordedRun(join(directory, "2026-11-25-x.json")),
        /is not a benchmark run/,
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
    assert.equal(newestRecordedRun(join(tmpdir(), "receiptd-no-such-directory")), null);
  });

  test("each result is divided by the same scenario against the same target", () => {
    const [single, batch, remote, unmatched, skipped] = compareWithPrevious(
      [
        result({ itemsPerSecond: 1250, peakRssMiB: 150 }),
        result({ scenario: "batch-50", itemsPerSecond: 1800, peakRssMiB: null }),
        result({ target: "http://127.0.0.1:9", itemsPerSecond: 100 }),
        result({ scenario: "cache-hit" }),
        result({ scenario: "batch-50", skipped: "not reachable" }),
      ],
      before,
    );
    assert.deepEqual(single?.vsPrevious, { itemsPerSecond: 1.25, peakRss: 0.5 });
    assert.deepEqual(batch?.vsPrevious, { itemsPerSecond: 0.9, peakRss: null });
    assert.deepEqual(remote?.vsPrevious, { itemsPerSecond: 2, peakRss: 1 });
    assert.equal(unmatched?.vsPrevious, undefined);
    assert.equal(skipped?.vsPrevious, undefined);
  });

  test("the report names the previous run and its ceiling, and shows each ratio", () => {
    const file = "docs/benchmarks/2026-11-22-2-core.json";
    const run: BenchRun = {
      ...benchRun(
        compareWithPrevious([result({ itemsPerSecond: 1250 }), result({ scenario: "x" })], before),
        "2026-11-24T10:00:00.000Z",
      ),
      previous: previousRunSummary(file, before),
    };
    for (const text of [renderTable(run), renderMarkdownTable(run)]) {
      assert.match(
        text,
        /vs previous: items\/s over 2026-11-22-2-core\.json \(2026-11-22T10:00:00\.000Z\), whose ceiling was 4,000 bundles\/s/,
      );
      assert.match(text, /×1\.25/);
    }
    const table = renderTable(run).split("\n");
    const unmatched = table.filter((line) => line.startsWith("single 6-receipt bundle"))[1];
    assert.match(unmatched ?? "", /%\s+—$/, "no previous figure: —");
  });
});
