import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { goalTable, renderGoalMarkdown, renderGoalText } from "../../bench/goals.js";
import { renderMarkdownTable, renderTable } from "../../bench/report.js";
import type { BenchRun, ScenarioResult } from "../../bench/types.js";

function result(overrides: Partial<ScenarioResult>): ScenarioResult {
  return {
    scenario: "single",
    title: "single 6-receipt bundle",
    target: "receiptd (embedded)",
    connections: 16,
    requests: 10_000,
    errors: 0,
    seconds: 10,
    requestsPerSecond: 1_000,
    unit: "bundles",
    itemsPerSecond: 1_000,
    latencyMs: { p50: 5, p95: 10, p99: 20, max: 30 },
    peakRssMiB: 150,
    ceilingRatio: 0.45,
    ...overrides,
  };
}

const run: BenchRun = {
  startedAt: "2026-11-29T06:00:00.000Z",
  quick: false,
  mode: "embedded",
  machine: { cpus: 2, cpuModel: "Xeon", node: "v20.20.2", platform: "linux x64", memoryGiB: 8 },
  ceiling: {
    implementation: "libsodium",
    threads: 2,
    verificationsPerSecond: 24_000,
    bundlesPerSecond: 4_000,
    signaturesPerBundle: 6,
    cpuMicrosPerVerification: 60,
  },
  minimalVerifier: {
    samples: [
      { threads: 2, bundlesPerSecond: 3_000, cpuMicrosPerBundle: 520 },
      { threads: 2, bundlesPerSecond: 3_200, cpuMicrosPerBundle: 500 },
    ],
    bundlesPerSecond: 3_200,
    cpuMicrosPerBundle: 500,
  },
  results: [
    result({ cpuMicrosPerItem: { mainThread: 90, otherThreads: 1_000, client: 40 } }),
    // The floor answers the same scenario: its figures must not be taken for receiptd's.
    result({
      target: "floor (node:http + workers)",
      ceilingRatio: 0.9,
      cpuMicrosPerItem: { mainThread: 1, otherThreads: 1, client: 1 },
    }),
    result({
      scenario: "batch-50",
      title: "50-bundle batch",
      connections: 4,
      requestsPerSecond: 54,
      itemsPerSecond: 2_700,
      ceilingRatio: 0.675,
      cpuMicrosPerItem: { mainThread: 20, otherThreads: 600, client: 2 },
    }),
    result({
      scenario: "cache-hit",
      unit: "requests",
      requestsPerSecond: 7_000,
      itemsPerSecond: 7_000,
      ceilingRatio: null,
      cpuMicrosPerItem: { mainThread: 120, otherThreads: 10, client: 30 },
    }),
    result({ scenario: "large-bodies", peakRssMiB: 190, ceilingRatio: null }),
  ],
};

describe("issue 33's goal table", () => {
  const rows = goalTable(run);
  const row = (start: string) => {
    const found = rows.find((candidate) => candidate.figure.startsWith(start));
    assert.ok(found, start);
    return found;
  };

  test("the worker's CPU per bundle is divided by the signature CPU of a bundle", () => {
    const ratio = row("50-bundle batches: worker CPU");
    assert.equal(ratio.now, "600 µs ÷ 360 µs = 1.67");
    assert.equal(ratio.met, false);
  });

  test("batch shares: of the libsodium ceiling and of the minimal verifier's highest rate", () => {
    const share = row("50-bundle batches: share");
    assert.equal(share.now, "67.5%, 84.4%");
    assert.equal(share.met, true);
  });

  test("singles come from receiptd's row, not the floor's", () => {
    assert.equal(row("single bundles, 16").now, "90 µs");
    assert.equal(row("single bundles, 16").met, true);
    const share = row("single bundles: share");
    assert.equal(share.now, "45.0% (31.3%), p99 20.0 ms");
    assert.equal(share.met, true);
  });

  test("CPU per bundle against the minimal verifier's lowest, main and other threads together", () => {
    const cpu = row("CPU per bundle");
    assert.equal(cpu.now, "500 µs ÷ 620 µs = 80.6%, ÷ 1,090 µs = 45.9%");
    assert.equal(cpu.met, true);
  });

  test("the reference's figure is the issue's, said so, and held by its low end", () => {
    const reference = row("the reference's");
    assert.match(reference.figure, /2,014–2,261 µs, not run here/);
    assert.equal(reference.now, "3.25–3.65× (the minimal verifier: 4.03×)");
    assert.equal(reference.met, true);
  });

  test("cache hits and RSS are judged; what the run did not measure is neither ✓ nor ✗", () => {
    assert.equal(row("cache hits").met, false);
    assert.equal(row("cache hits").now, "7,000/s, main thread 120 µs");
    assert.equal(row("peak RSS").now, "199 MB");
    assert.equal(row("peak RSS").met, true);
    assert.equal(row("settlements").met, null);
    assert.equal(row("settlements").now, "not measured in this run");
  });

  test("settlements are judged in embedded mode only", () => {
    const settlement = result({
      scenario: "settlement",
      unit: "receipts",
      itemsPerSecond: 3_100,
      ceilingRatio: null,
      target: "receiptd (distributed)",
    });
    const embedded = goalTable({ ...run, results: [settlement] });
    const distributed = goalTable({ ...run, mode: "distributed", results: [settlement] });
    const pick = (table: typeof rows) => table.find((r) => r.figure.startsWith("settlements"));
    assert.equal(pick(embedded)?.met, true);
    assert.equal(pick(distributed)?.met, null);
    assert.match(pick(distributed)?.now ?? "", /distributed: the goal is embedded/);
  });

  test("the text and markdown reports end with the table", () => {
    const text = renderTable(run);
    assert.ok(text.includes(renderGoalText(run).join("\n")));
    assert.match(text, /minimal verifier .*3,200 bundles\/s, 500 µs CPU per bundle/);
    const markdown = renderMarkdownTable(run);
    assert.ok(markdown.includes(renderGoalMarkdown(run).join("\n")));
    assert.match(
      markdown,
      /\| peak RSS, 16 concurrent 1 MiB batches \| 199 MB \| ≤ 210 MB \| ✓ \|/,
    );
  });
});
