/** The shapes a benchmark run produces: written as JSON, drawn as a table and an SVG chart. */

import type { CpuPerItem } from "./thread-cpu.js";

export interface LatencySummary {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** One scenario driven against one deployment. */
export interface ScenarioResult {
  /** Stable scenario id, e.g. `batch-50`. */
  scenario: string;
  /** Human title, e.g. `50-bundle batch`. */
  title: string;
  /** Which deployment answered: `receiptd` (the one the harness started) or a `--target` label. */
  target: string;
  /**
   * `cli`: a run of `receiptd verify` as a process (the bulk scenarios, bulk-scenarios.ts):
   * one "request" per bundle and no latency; with the CLI for its target, its RSS is the CLI's.
   */
  kind?: "cli";
  /** What the goal divides by, measured in the same run (the library's rate, batch-50's). */
  reference?: { description: string; itemsPerSecond: number };
  /** Set when the scenario could not run against this target; every figure is then zero. */
  skipped?: string;
  connections: number;
  /** Completed requests (answered with the expected status) plus errors. */
  requests: number;
  /** Requests answered with an unexpected status, a malformed body, or a transport failure. */
  errors: number;
  /** Wall time of the measured phase, seconds. */
  seconds: number;
  requestsPerSecond: number;
  /** What one request carries (`bundles`, `requests`, `receipts`) and its rate. */
  unit: string;
  itemsPerSecond: number;
  /** Request latency in milliseconds. */
  latencyMs: LatencySummary;
  /** Peak resident set size of the service process during the scenario, MiB; null if unknown. */
  peakRssMiB: number | null;
  /** Peak RSS of the queue worker process (distributed mode), MiB. */
  workerPeakRssMiB?: number | null;
  /**
   * Microseconds of CPU one item cost during the measured phase: the service's main thread,
   * its other threads, and the load client (bench/thread-cpu.ts); null for remote targets.
   */
  cpuMicrosPerItem?: CpuPerItem | null;
  /** Ed25519 verifications per second the scenario implies, divided by the ceiling; null when it has none. */
  ceilingRatio: number | null;
  /** This result divided by the same scenario's in the previous recorded run (previous-run.ts). */
  vsPrevious?: { itemsPerSecond: number | null; peakRss: number | null };
  /** The performance goal for this scenario, if it has one, and whether this run met it. */
  goal?: GoalCheck;
}

export interface GoalCheck {
  description: string;
  met: boolean;
}

/** Whose Ed25519 the ceiling loop runs: libsodium (the service's) or OpenSSL (its fallback). */
export type CeilingImplementation = "libsodium" | "openssl";

export interface CeilingMeasurement {
  /** Absent in runs recorded before libsodium, whose ceiling was OpenSSL's. */
  implementation?: CeilingImplementation;
  /** Worker threads used, one per core. */
  threads: number;
  /** Ed25519 verifications per second over all threads, of the bench bundle's own signatures. */
  verificationsPerSecond: number;
  /** The same expressed as six-receipt bundles per second (verifications ÷ signatures per bundle). */
  bundlesPerSecond: number;
  signaturesPerBundle: number;
  /**
   * CPU (user + system, from /proc/thread-self) one verification cost the loop's threads:
   * the signature CPU a bundle's verification cannot go below. Absent in older runs.
   */
  cpuMicrosPerVerification?: number;
}

/** One measurement of issue 33's minimal verifier (ceiling.ts). */
export interface MinimalVerifierSample {
  threads: number;
  bundlesPerSecond: number;
  cpuMicrosPerBundle: number;
}

/** The minimal verifier over a run: its samples, the highest rate and the lowest CPU per bundle. */
export interface MinimalVerifier {
  samples: MinimalVerifierSample[];
  bundlesPerSecond: number;
  cpuMicrosPerBundle: number;
}

export interface BenchRun {
  startedAt: string;
  quick: boolean;
  mode: "embedded" | "distributed";
  machine: { cpus: number; cpuModel: string; node: string; platform: string; memoryGiB: number };
  /** libsodium's ceiling, which `ceilingRatio` divides by. */
  ceiling: CeilingMeasurement;
  /** OpenSSL's, measured beside it (the fallback's ceiling, and the one of earlier runs). */
  opensslCeiling?: CeilingMeasurement;
  /** Issue 33's minimal verifier, measured before, between and after the scenarios. */
  minimalVerifier?: MinimalVerifier;
  /** The recorded run the `vsPrevious` ratios compare with. */
  previous?: PreviousRun;
  results: ScenarioResult[];
}

export interface PreviousRun {
  file: string;
  startedAt: string;
  ceilingBundlesPerSecond: number;
}
