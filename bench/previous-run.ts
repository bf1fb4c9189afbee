/**
 * The ratio of each figure to the previous recorded run (issue 15): `docs/benchmarks/` keeps
 * the runs worth keeping, one JSON per run, named by date; the newest one is the default
 * baseline. A scenario is compared with the same scenario against the same target label
 * (`receiptd (embedded)`, or a `--target` URL) in that run.
 *
 * Throughput depends on the machine and on what else runs on it, so the report also prints
 * both runs' crypto ceilings: a ratio is only meaningful when they are close.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchRun, PreviousRun, ScenarioResult } from "./types.js";

/** The newest `*.json` of `directory` by name (names start with the date), or null. */
export function newestRecordedRun(directory: string): string | null {
  let names: string[];
  try {
    names = readdirSync(directory).filter((name) => name.endsWith(".json"));
  } catch {
    return null;
  }
  const newest = names.sort().at(-1);
  return newest === undefined ? null : join(directory, newest);
}

export function readRecordedRun(file: string): BenchRun {
  const run = JSON.parse(readFileSync(file, "utf8")) as Partial<BenchRun>;
  if (!Array.isArray(run.results) || run.ceiling === undefined || run.startedAt === undefined) {
    throw new Error(`${file} is not a benchmark run (no results, ceiling or start time)`);
  }
  return run as BenchRun;
}

/** `results` with each one's ratio to the same scenario and target of `previous`. */
export function compareWithPrevious(
  results: readonly ScenarioResult[],
  previous: BenchRun,
): ScenarioResult[] {
  return results.map((result) => {
    const before = previous.results.find(
      (candidate) =>
        candidate.scenario === result.scenario &&
        candidate.target === result.target &&
        candidate.skipped === undefined,
    );
    if (before === undefined || result.skipped !== undefined) return result;
    return {
      ...result,
      vsPrevious: {
        itemsPerSecond:
          before.itemsPerSecond > 0 ? result.itemsPerSecond / before.itemsPerSecond : null,
        peakRss:
          before.peakRssMiB && result.peakRssMiB ? result.peakRssMiB / before.peakRssMiB : null,
      },
    };
  });
}

export function previousRunSummary(file: string, previous: BenchRun): PreviousRun {
  return {
    file,
    startedAt: previous.startedAt,
    ceilingBundlesPerSecond: previous.ceiling.bundlesPerSecond,
  };
}
