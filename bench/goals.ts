/**
 * Issue 33's table of figures, computed from one bench run and printed at the end of its
 * report (report.ts) with now, goal and ✓/✗. CPU figures come from /proc (thread-cpu.ts):
 * on a shared machine they drift far less than throughput, so the issue judges by them.
 *
 * The Python reference is not run here: its CPU per bundle is the issue's own measurement.
 */
import type { BenchRun, ScenarioResult } from "./types.js";

/** The Python reference's server CPU per bundle, issue 33's measurement (3 runs, not this one). */
export const REFERENCE_CPU_MICROS_PER_BUNDLE = { low: 2_014, high: 2_261 } as const;

export interface GoalRow {
  figure: string;
  now: string;
  goal: string;
  /** null: this run cannot tell (the scenario was not run, no /proc, another mode). */
  met: boolean | null;
}

const whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const twoDecimals = new Intl.NumberFormat("en-US", {
  minimumFractionDigits: 2,
  maximumFractionDigits: 2,
});
const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
const MB_PER_MIB = 2 ** 20 / 1e6;

/** The run's own receiptd (not the floor, not a --target), by scenario id. */
function ownResult(run: BenchRun, scenario: string): ScenarioResult | undefined {
  return run.results.find(
    (result) =>
      result.scenario === scenario &&
      result.target.startsWith("receiptd (") &&
      result.skipped === undefined &&
      result.requests > 0,
  );
}

const serverCpu = (result: ScenarioResult | undefined): number | undefined =>
  result?.cpuMicrosPerItem
    ? result.cpuMicrosPerItem.mainThread + result.cpuMicrosPerItem.otherThreads
    : undefined;

const unknown = (figure: string, goal: string, why = "not measured in this run"): GoalRow => ({
  figure,
  now: why,
  goal,
  met: null,
});

export function goalTable(run: BenchRun): GoalRow[] {
  const rows: GoalRow[] = [];
  const batch = ownResult(run, "batch-50");
  const single = ownResult(run, "single");
  const minimal = run.minimalVerifier;
  const signatureCpuPerBundle =
    run.ceiling.cpuMicrosPerVerification === undefined
      ? undefined
      : run.ceiling.cpuMicrosPerVerification * run.ceiling.signaturesPerBundle;

  {
    const figure = "50-bundle batches: worker CPU per bundle ÷ its libsodium signature CPU";
    const goal = "≤ 1.3";
    const worker = batch?.cpuMicrosPerItem?.otherThreads;
    if (worker === undefined || signatureCpuPerBundle === undefined)
      rows.push(unknown(figure, goal));
    else {
      const ratio = worker / signatureCpuPerBundle;
      rows.push({
        figure,
        now: `${whole.format(worker)} µs ÷ ${whole.format(signatureCpuPerBundle)} µs = ${twoDecimals.format(ratio)}`,
        goal,
        met: ratio <= 1.3,
      });
    }
  }
  {
    const figure = "50-bundle batches: share of the libsodium ceiling, of the minimal verifier";
    const goal = "≥ 65%, ≥ 75%";
    if (batch?.ceilingRatio == null || minimal === undefined) rows.push(unknown(figure, goal));
    else {
      const ofMinimal = batch.itemsPerSecond / minimal.bundlesPerSecond;
      rows.push({
        figure,
        now: `${percent(batch.ceilingRatio)}, ${percent(ofMinimal)}`,
        goal,
        met: batch.errors === 0 && batch.ceilingRatio >= 0.65 && ofMinimal >= 0.75,
      });
    }
  }
  {
    const figure = "single bundles, 16 connections: main-thread CPU per request";
    const goal = "≤ 100 µs";
    const main = single?.cpuMicrosPerItem?.mainThread;
    rows.push(
      main === undefined
        ? unknown(figure, goal)
        : { figure, now: `${whole.format(main)} µs`, goal, met: main <= 100 },
    );
  }
  {
    const figure = "single bundles: share of the ceiling (of the minimal verifier), p99";
    const goal = "≥ 40%, p99 ≤ 25 ms";
    if (single?.ceilingRatio == null) rows.push(unknown(figure, goal));
    else {
      const ofMinimal =
        minimal === undefined
          ? ""
          : ` (${percent(single.itemsPerSecond / minimal.bundlesPerSecond)})`;
      rows.push({
        figure,
        now: `${percent(single.ceilingRatio)}${ofMinimal}, p99 ${single.latencyMs.p99.toFixed(1)} ms`,
        goal,
        met: single.errors === 0 && single.ceilingRatio >= 0.4 && single.latencyMs.p99 <= 25,
      });
    }
  }
  {
    const figure = "cache hits (?cache=1), main-thread CPU per hit";
    const goal = "≥ 8,000/s";
    const hits = ownResult(run, "cache-hit");
    rows.push(
      hits === undefined
        ? unknown(figure, goal)
        : {
            figure,
            now:
              `${whole.format(hits.requestsPerSecond)}/s` +
              (hits.cpuMicrosPerItem
                ? `, main thread ${whole.format(hits.cpuMicrosPerItem.mainThread)} µs`
                : ""),
            goal,
            met: hits.errors === 0 && hits.requestsPerSecond >= 8_000,
          },
    );
  }
  {
    const figure = "CPU per bundle against the minimal verifier (batches, singles)";
    const goal = "≥ 75%, ≥ 40%";
    const batchCpu = serverCpu(batch);
    const singleCpu = serverCpu(single);
    if (minimal === undefined || batchCpu === undefined || singleCpu === undefined) {
      rows.push(unknown(figure, goal));
    } else {
      const ofBatch = minimal.cpuMicrosPerBundle / batchCpu;
      const ofSingle = minimal.cpuMicrosPerBundle / singleCpu;
      rows.push({
        figure,
        now:
          `${whole.format(minimal.cpuMicrosPerBundle)} µs ÷ ${whole.format(batchCpu)} µs = ${percent(ofBatch)}, ` +
          `÷ ${whole.format(singleCpu)} µs = ${percent(ofSingle)}`,
        goal,
        met: ofBatch >= 0.75 && ofSingle >= 0.4,
      });
    }
  }
  {
    const figure =
      "the reference's CPU per bundle (issue 33's 2,014–2,261 µs, not run here) ÷ receiptd's (batches)";
    const goal = "≥ 3×";
    const batchCpu = serverCpu(batch);
    if (batchCpu === undefined) rows.push(unknown(figure, goal));
    else {
      const low = REFERENCE_CPU_MICROS_PER_BUNDLE.low / batchCpu;
      const high = REFERENCE_CPU_MICROS_PER_BUNDLE.high / batchCpu;
      const minimalNote =
        minimal === undefined
          ? ""
          : ` (the minimal verifier: ${twoDecimals.format(REFERENCE_CPU_MICROS_PER_BUNDLE.low / minimal.cpuMicrosPerBundle)}×)`;
      rows.push({
        figure,
        now: `${twoDecimals.format(low)}–${twoDecimals.format(high)}×${minimalNote}`,
        goal,
        // Held by the reference's lowest figure, the one least favourable to receiptd.
        met: low >= 3,
      });
    }
  }
  {
    const figure = "peak RSS, 16 concurrent 1 MiB batches";
    const goal = "≤ 210 MB";
    const large = ownResult(run, "large-bodies");
    if (large?.peakRssMiB == null) rows.push(unknown(figure, goal));
    else {
      const mb = large.peakRssMiB * MB_PER_MIB;
      rows.push({
        figure,
        now: `${whole.format(mb)} MB`,
        goal,
        met: large.errors === 0 && mb <= 210,
      });
    }
  }
  {
    const figure = "settlements (POST /payment-receipts), durable, embedded";
    const goal = "≥ 3,000/s";
    const settlements = ownResult(run, "settlement");
    if (settlements === undefined) rows.push(unknown(figure, goal));
    else {
      const now = `${whole.format(settlements.itemsPerSecond)}/s, p99 ${settlements.latencyMs.p99.toFixed(1)} ms`;
      rows.push(
        run.mode === "embedded"
          ? {
              figure,
              now,
              goal,
              met: settlements.errors === 0 && settlements.itemsPerSecond >= 3_000,
            }
          : { figure, now: `${now} (distributed: the goal is embedded)`, goal, met: null },
      );
    }
  }
  return rows;
}

/** The minimal verifier's line: what the table's "of the minimal verifier" divides by. */
export function minimalVerifierLine(run: BenchRun): string[] {
  const minimal = run.minimalVerifier;
  if (minimal === undefined) return [];
  const samples = minimal.samples
    .map(
      (sample) =>
        `${whole.format(sample.bundlesPerSecond)}/s at ${whole.format(sample.cpuMicrosPerBundle)} µs`,
    )
    .join("; ");
  const signature =
    run.ceiling.cpuMicrosPerVerification === undefined
      ? ""
      : `; libsodium's signature CPU: ${whole.format(run.ceiling.cpuMicrosPerVerification)} µs per verification`;
  return [
    `minimal verifier (JSON.parse, sorted-key canonical bytes, SHA-256, libsodium Ed25519, on ${minimal.samples[0]?.threads ?? "?"} threads): ` +
      `${whole.format(minimal.bundlesPerSecond)} bundles/s, ${whole.format(minimal.cpuMicrosPerBundle)} µs CPU per bundle ` +
      `(best of before, between, after: ${samples})${signature}`,
  ];
}

const mark = (met: boolean | null) => (met === null ? "—" : met ? "✓" : "✗");

/** The goal table as aligned text, for stdout. */
export function renderGoalText(run: BenchRun): string[] {
  const rows = goalTable(run);
  const header = ["issue 33", "now", "goal", ""];
  const cells = rows.map((row) => [row.figure, row.now, row.goal, mark(row.met)]);
  const width = (index: number) =>
    Math.max(...[header, ...cells].map((line) => [...(line[index] ?? "")].length));
  const widths = header.map((_, index) => width(index));
  const line = (values: string[]) =>
    values
      .map((value, index) => value + " ".repeat((widths[index] ?? 0) - [...value].length))
      .join("  ")
      .trimEnd();
  return [
    "goals (CPU from /proc of the server; the machine may be shared: judge by CPU)",
    ...minimalVerifierLine(run),
    line(header),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...cells.map(line),
  ];
}

/** The goal table in markdown, for the .md report. */
export function renderGoalMarkdown(run: BenchRun): string[] {
  const escapeCell = (text: string): string => text.replace(/[\\|<*_`]/g, "\\$&");
  return [
    "Issue 33's goals (CPU per item from /proc of the server; the machine may be shared: judge by CPU):",
    "",
    ...minimalVerifierLine(run),
    "",
    "| figure | now | goal | |",
    "| --- | --- | --- | --- |",
    ...goalTable(run).map(
      (row) =>
        `| ${escapeCell(row.figure)} | ${escapeCell(row.now)} | ${escapeCell(row.goal)} | ${mark(row.met)} |`,
    ),
  ];
}
