/**
 * `--tracing` (issue 36): a second receiptd started beside the first, with tracing on and
 * exporting OTLP/HTTP (protobuf, the default) to a local receiver that discards what it gets,
 * so each scenario runs off then on in the same run, and the cost of tracing prints as ratios.
 * The receiver lives in the harness process: its CPU is the client's, never the service's.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ScenarioResult } from "./types.js";

export interface DiscardingReceiver {
  /** The base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  /** Export requests received (so a run shows spans really left the service). */
  exports(): number;
  close(): Promise<void>;
}

/** An OTLP/HTTP endpoint that reads each export request, drops it and answers 200. */
export async function startDiscardingReceiver(): Promise<DiscardingReceiver> {
  let count = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      count += 1;
      response.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exports: () => count,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      return closed;
    },
  };
}

/** The service's CPU per item (main thread and the others), or null when unknown. */
function serviceCpu(result: ScenarioResult): number | null {
  const cpu = result.cpuMicrosPerItem;
  return cpu === undefined || cpu === null ? null : cpu.mainThread + cpu.otherThreads;
}

/**
 * One line per scenario measured both ways: throughput and the service's CPU per item with
 * tracing on, each divided by the same figure with tracing off.
 */
export function tracingRatioLines(
  results: readonly ScenarioResult[],
  offLabel: string,
  onLabel: string,
): string[] {
  const lines: string[] = [];
  for (const off of results.filter((result) => result.target === offLabel)) {
    const on = results.find(
      (result) => result.target === onLabel && result.scenario === off.scenario,
    );
    if (on === undefined || off.skipped !== undefined || on.skipped !== undefined) continue;
    const offCpu = serviceCpu(off);
    const onCpu = serviceCpu(on);
    const cpu =
      offCpu === null || onCpu === null || offCpu === 0
        ? "CPU unknown"
        : `service CPU/item ${offCpu.toFixed(0)} → ${onCpu.toFixed(0)} µs = ${(onCpu / offCpu).toFixed(3)}×`;
    lines.push(
      `tracing on/off, ${off.scenario}: ${off.itemsPerSecond.toFixed(0)} → ` +
        `${on.itemsPerSecond.toFixed(0)} ${off.unit}/s = ` +
        `${(on.itemsPerSecond / off.itemsPerSecond).toFixed(3)}× throughput; ${cpu}; ` +
        `p50 ${off.latencyMs.p50.toFixed(2)} → ${on.latencyMs.p50.toFixed(2)} ms`,
    );
  }
  return lines;
}
