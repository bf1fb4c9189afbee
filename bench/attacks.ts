/**
 * Measures issue 22's compute attack: an honest client's `POST /verify` latency while two
 * 1 MiB did:key bombs are sent, and the CPU the service spends after the bombs' clients hang
 * up. Bounded: two bombs, one honest request at a time, `--seconds` of watching (default 30).
 *
 *   node --import tsx bench/attacks.ts [--seconds 30] [--hangup-ms 3000] [--distributed]
 *
 * Each bomb is a real bundle whose first receipt names its issuer and signing key as one
 * `did:key:z…` of about 520,000 base58 digits (two of them: a body just under the 1 MiB limit).
 * The bombs' clients hang up after `--hangup-ms`, as the attacker of the issue did. Meanwhile
 * an honest client sends a small bundle, one request after another; the figure is its worst
 * latency (an answer still pending when the watch ends counts with the time it has waited),
 * with the service's CPU seconds during the watch (from /proc: web process, and the worker
 * in distributed mode). Run it on two builds side by side: the machine's load moves both.
 */
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { parseArgs } from "node:util";
import { didKeyBombBundle, generatedBundle } from "./fixtures.js";
import { startServiceProcess } from "./service-process.js";

const CLOCK_TICKS_PER_SECOND = 100;
const BOMB_BODY_BYTES = 1_040_000;

/** utime + stime of `pid`, in seconds (Linux /proc). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

interface Sent {
  status: number | string;
  ms: number;
}

/** POST `body`; with `hangupMs`, the client closes its connection then, answered or not. */
function post(origin: string, key: string, body: Buffer, hangupMs?: number): Promise<Sent> {
  return new Promise((resolve) => {
    const started = performance.now();
    const done = (status: number | string) => resolve({ status, ms: performance.now() - started });
    const client = request(`${origin}/verify`, {
      method: "POST",
      agent: false,
      headers: { "content-type": "application/json", "x-svc-key": key },
    });
    client.on("response", (response) => {
      response.resume();
      response.on("end", () => done(response.statusCode ?? 0));
    });
    client.on("error", () => done("hung up"));
    if (hangupMs !== undefined) setTimeout(() => client.destroy(), hangupMs).unref();
    client.end(body);
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "30" },
      "hangup-ms": { type: "string", default: "3000" },
      distributed: { type: "boolean", default: false },
    },
  });
  const watchMs = Number(values.seconds) * 1000;
  const hangupMs = Number(values["hangup-ms"]);
  const service = await startServiceProcess({ distributed: values.distributed });
  const pids = [
    service.pids.web,
    ...(service.pids.worker === undefined ? [] : [service.pids.worker]),
  ];
  try {
    const honestBody = Buffer.from(generatedBundle(6, 1));
    const bomb = didKeyBombBundle(BOMB_BODY_BYTES);
    // Warm up: the threads are started and the honest path compiled before anything is timed.
    for (let i = 0; i < 20; i++) await post(service.origin, service.apiKey, honestBody);
    const quiet: number[] = [];
    for (let i = 0; i < 50; i++)
      quiet.push((await post(service.origin, service.apiKey, honestBody)).ms);

    const cpuBefore = pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const started = performance.now();
    const bombs = [0, 1].map(() => post(service.origin, service.apiKey, bomb, hangupMs));
    const latencies: number[] = [];
    const failures: (number | string)[] = [];
    let pending: { started: number } | null = null;
    const honest = (async () => {
      while (performance.now() - started < watchMs) {
        pending = { started: performance.now() };
        const sent = await post(service.origin, service.apiKey, honestBody);
        pending = null;
        latencies.push(sent.ms);
        if (sent.status !== 200) failures.push(sent.status);
      }
    })();
    await Promise.race([honest, new Promise((resolve) => setTimeout(resolve, watchMs))]);
    const elapsedMs = performance.now() - started;
    const cpu = pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0) - cpuBefore;
    const stillWaiting =
      pending === null ? 0 : performance.now() - (pending as { started: number }).started;
    const worst = Math.max(stillWaiting, ...latencies);
    const bombOutcomes = await Promise.all(bombs);
    const sorted = [...latencies].sort((a, b) => a - b);
    const quietSorted = [...quiet].sort((a, b) => a - b);
    console.log(
      `did:key bombs (${values.distributed ? "distributed" : "embedded"}): 2 × ${bomb.length} bytes, clients hang up after ${hangupMs} ms`,
    );
    console.log(
      `  honest /verify before the attack: p50 ${quietSorted[25]!.toFixed(1)} ms, max ${quietSorted.at(-1)!.toFixed(1)} ms`,
    );
    console.log(
      `  honest /verify during ${(elapsedMs / 1000).toFixed(1)} s of attack: ${latencies.length} answered` +
        `${failures.length > 0 ? ` (${failures.length} not 200: ${[...new Set(failures)].join(", ")})` : ""}, ` +
        `p50 ${(sorted[Math.floor(sorted.length / 2)] ?? stillWaiting).toFixed(1)} ms, worst ${worst.toFixed(1)} ms` +
        `${stillWaiting > 0 ? ` (one still waiting at the end: ${stillWaiting.toFixed(0)} ms)` : ""}`,
    );
    console.log(
      `  bombs: ${bombOutcomes.map((b) => `${b.status} after ${b.ms.toFixed(0)} ms`).join("; ")}`,
    );
    console.log(
      `  service CPU during the watch: ${cpu.toFixed(1)} s (${(cpu / (elapsedMs / 1000)).toFixed(2)} cores)`,
    );
  } finally {
    await service.stop();
  }
}

await main();
