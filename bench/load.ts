/**
 * A closed-loop HTTP load generator: `connections` loops, each with its own keep-alive
 * connection (`http1-connection.ts`), sending its next request as soon as the previous
 * answer is read, so the offered load follows the service's pace (as real clients with a
 * fixed connection pool do). A warm-up phase is run and discarded; only requests that start
 * inside the measured window are counted.
 */
import { Http1Connection } from "./http1-connection.js";
import type { LatencySummary } from "./types.js";

export interface RequestSpec {
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface LoadOptions {
  origin: string;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** The `n`-th request to send (n counts from 0 over the whole run, warm-up included). */
  request(n: number): RequestSpec;
  /** Called once, when the warm-up ends and the measured window begins. */
  onMeasureStart?(): void;
  /** Whether an answer is the expected one; anything else counts as an error. */
  accept(status: number, body: string, spec: RequestSpec): boolean;
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  latencyMs: LatencySummary;
  /** The first unexpected answer, to tell a misconfigured run from a slow one. */
  firstError?: string;
}

const ERROR_SAMPLE_CHARS = 300;
const ANSWER_TIMEOUT_MS = 120_000;

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const connections = Array.from(
    { length: options.connections },
    () => new Http1Connection(options.origin, ANSWER_TIMEOUT_MS),
  );
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let sent = 0;
  const startedAt = performance.now();
  const measureFrom = startedAt + options.warmupMs;
  const stopAt = measureFrom + options.durationMs;

  const measureStart = setTimeout(() => options.onMeasureStart?.(), options.warmupMs);
  const loop = async (connection: Http1Connection) => {
    for (;;) {
      const began = performance.now();
      if (began >= stopAt) return;
      const spec = options.request(sent++);
      let failure: string | undefined;
      try {
        const answer = await connection.request(spec);
        if (!options.accept(answer.status, answer.body, spec)) {
          failure = `${answer.status} ${answer.body.slice(0, ERROR_SAMPLE_CHARS)}`;
        }
      } catch (error) {
        failure = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
      if (began < measureFrom) continue;
      latencies.push(performance.now() - began);
      if (failure !== undefined) {
        errors++;
        firstError ??= `${spec.method} ${spec.path}: ${failure}`;
      }
    }
  };
  await Promise.all(connections.map(loop));
  clearTimeout(measureStart);
  // Requests started before `stopAt` may finish after it: the window is until the last one.
  const seconds = (performance.now() - measureFrom) / 1000;
  for (const connection of connections) connection.close();
  return {
    requests: latencies.length,
    errors,
    seconds,
    latencyMs: summarise(latencies),
    ...(firstError === undefined ? {} : { firstError }),
  };
}

/** Nearest-rank percentiles of `samples` (milliseconds). */
export function summarise(samples: number[]): LatencySummary {
  if (samples.length === 0) return { p50: 0, p95: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(samples).sort();
  const rank = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
  return { p50: rank(0.5), p95: rank(0.95), p99: rank(0.99), max: sorted[sorted.length - 1]! };
}
