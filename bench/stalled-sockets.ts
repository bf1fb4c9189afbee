/**
 * Measures issue 16's hostile-load figure: how many stalled sockets `receiptd serve` holds
 * while `GET /health` still answers, and how fast it answers. Bounded: `--sockets` (default
 * 3,000) connections per scenario, opened in batches, 20 health probes, everything closed at
 * the end.
 *
 *   node --import tsx bench/stalled-sockets.ts [--sockets 3000] [--max-connections 1000]
 *
 * Scenarios, each against a fresh embedded `receiptd serve` (default timeouts):
 * - keyless: `POST /verify` without a key, `Content-Length: 1000000`, one byte sent: refused
 *   with 401 at once, and the connection closed (nothing is held);
 * - keyed: the same with a valid key: the body is awaited, so the socket is held until the
 *   idle timeout;
 * - capped: the keyed scenario against `MAX_CONNECTIONS=--max-connections`: past the cap new
 *   connections get 503 and `/health` goes through the reserve.
 */
import { readdirSync, readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { parseArgs } from "node:util";
import { startServiceProcess } from "./service-process.js";

const BATCH = 250;
const PROBES = 20;

interface Stalled {
  socket: Socket;
  status: number | null;
  closed: boolean;
}

function openStalled(port: number, head: string): Promise<Stalled> {
  return new Promise((resolve) => {
    const stalled: Stalled = { socket: connect(port, "127.0.0.1"), status: null, closed: false };
    const { socket } = stalled;
    socket.on("data", (chunk: Buffer) => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(chunk.toString("latin1"));
      if (match !== null && stalled.status === null) stalled.status = Number(match[1]);
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      stalled.closed = true;
      resolve(stalled);
    });
    socket.once("connect", () => {
      socket.write(head);
      resolve(stalled);
    });
  });
}

/** One `GET /health` on a fresh connection; milliseconds to the full answer, or the failure. */
function probeHealth(port: number): Promise<{ ms: number; status: number | string }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(port, "127.0.0.1");
    let text = "";
    const done = (status: number | string) => {
      socket.destroy();
      resolve({ ms: performance.now() - started, status });
    };
    const timer = setTimeout(() => done("no answer in 10 s"), 10_000);
    socket.on("connect", () => socket.write("GET /health HTTP/1.1\r\nHost: probe\r\n\r\n"));
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (text.includes("\r\n\r\n") && text.includes("}")) {
        clearTimeout(timer);
        done(Number(text.slice(9, 12)));
      }
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      done(error.code ?? "error");
    });
  });
}

function processFigures(pid: number): { fds: number; rssMiB: number } {
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  return { fds, rssMiB: Math.round(rssKiB / 1024) };
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

async function scenario(
  name: string,
  sockets: number,
  keyed: boolean,
  env: Record<string, string>,
) {
  const service = await startServiceProcess({ distributed: false, env });
  try {
    const port = Number(new URL(service.origin).port);
    const credential = keyed ? `X-SVC-Key: ${service.apiKey}\r\n` : "";
    const head =
      `POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\n${credential}` +
      "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{";
    const before = processFigures(service.pids.web);
    const stalled: Stalled[] = [];
    for (let opened = 0; opened < sockets; opened += BATCH) {
      const batch = Math.min(BATCH, sockets - opened);
      stalled.push(
        ...(await Promise.all(Array.from({ length: batch }, () => openStalled(port, head)))),
      );
    }
    // Let the server answer what it answers at once (refusals) before counting.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const probes: { ms: number; status: number | string }[] = [];
    for (let index = 0; index < PROBES; index += 1) probes.push(await probeHealth(port));
    const held = stalled.filter((entry) => !entry.closed).length;
    const statuses = new Map<string, number>();
    for (const entry of stalled) {
      const key = `${entry.status ?? "none"}${entry.closed ? "/closed" : "/open"}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    const during = processFigures(service.pids.web);
    const latencies = probes.map((probe) => probe.ms);
    const ok = probes.filter((probe) => probe.status === 200).length;
    console.log(`\n${name}: ${sockets} stalled connections`);
    console.log(`  answers: ${[...statuses].map(([key, count]) => `${key} ${count}`).join(", ")}`);
    console.log(`  held open by the server while probing: ${held}`);
    console.log(
      `  /health: ${ok}/${PROBES} answered 200; p50 ${percentile(latencies, 0.5).toFixed(1)} ms, ` +
        `max ${Math.max(...latencies).toFixed(1)} ms (fresh connection each)`,
    );
    const failures = probes.filter((probe) => probe.status !== 200).map((probe) => probe.status);
    if (failures.length > 0) console.log(`  /health failures: ${failures.join(", ")}`);
    console.log(
      `  server: ${before.fds} → ${during.fds} open files, ${before.rssMiB} → ${during.rssMiB} MiB RSS`,
    );
    for (const entry of stalled) entry.socket.destroy();
  } finally {
    await service.stop();
  }
}

const { values } = parseArgs({
  options: {
    sockets: { type: "string", default: "3000" },
    "max-connections": { type: "string", default: "1000" },
  },
});
const sockets = Number(values.sockets);
const cap = values["max-connections"];
if (!Number.isSafeInteger(sockets) || sockets < 1 || sockets > 15_000) {
  throw new Error("--sockets must be between 1 and 15,000");
}
await scenario("keyless", sockets, false, {});
await scenario("keyed", sockets, true, {});
await scenario(`keyed, MAX_CONNECTIONS=${cap}`, sockets, true, { MAX_CONNECTIONS: cap });
