/**
 * Measures issue 16's hostile-load figure: how many stalled sockets `receiptd serve` holds
 * while `GET /health` still answers, and how fast it answers. Bounded: `--sockets` (default
 * 3,000) connections per scenario, opened in batches, 20 health probes, everything closed at
 * the end.
 *
 *   node --import tsx bench/stalled-sockets.ts [--sockets 3000] [--max-connections 1000]
 *     [--only keyless,keyed,capped,keep-alive,mcp-bodies,crystal-bodies]
 *
 * Scenarios, each against a fresh embedded `receiptd serve` (default timeouts):
 * - keyless: `POST /verify` without a key, `Content-Length: 1000000`, one byte sent: refused
 *   with 401 at once, and the connection closed (nothing is held);
 * - keyed: the same with a valid key: the body is awaited, so the socket is held until the
 *   idle timeout;
 * - capped: the keyed scenario against `MAX_CONNECTIONS=--max-connections`: past the cap new
 *   connections get 503 and `/health` goes through the reserve.
 *
 * Issue 22's figures (connections and memory), each against a fresh embedded service with its
 * default limits; attackers and the honest client bind distinct loopback source addresses:
 * - keep-alive: one address (127.0.1.1) holds 4,200 keep-alive connections, each served one
 *   `GET /health` and then idle, reconnecting when closed; a second address (127.0.1.2) sends
 *   40 keyed `POST /verify` of a real bundle, each on a fresh connection: how many get 200;
 * - mcp-bodies: 2,000 anonymous `POST /mcp` declaring 1 MiB and sending all but its last
 *   byte, from 8 addresses: RSS while they are held, and 60 s after they close;
 * - crystal-bodies: the same with 1,000 keyed `POST /crystals` of 4 MiB.
 */
import { readdirSync, readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
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

/** A connection from `localAddress` that sends `head` (and `body`) and records what comes back. */
function openFrom(
  port: number,
  localAddress: string,
  head: string,
  body?: Buffer,
): Promise<Stalled> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1", localAddress });
    const stalled: Stalled = { socket, status: null, closed: false };
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
      if (body === undefined) resolve(stalled);
      // Resolved once the kernel has taken the body (the server reads it) or the socket closed.
      else socket.write(body, () => resolve(stalled));
    });
  });
}

/** One keyed `POST /verify` of `bundle` on a fresh connection from `localAddress`. */
function honestVerify(port: number, localAddress: string, key: string, bundle: Buffer) {
  return new Promise<number | string>((resolve) => {
    const socket = connect({ port, host: "127.0.0.1", localAddress });
    let text = "";
    const done = (status: number | string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(status);
    };
    const timer = setTimeout(() => done("no answer in 10 s"), 10_000);
    socket.on("connect", () => {
      socket.write(
        `POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-Key: ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${bundle.length}\r\n\r\n`,
      );
      socket.write(bundle);
    });
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      const status = Number(text.slice(9, 12));
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? Number.NaN);
      const bodyStart = text.indexOf("\r\n\r\n");
      if (bodyStart >= 0 && text.length - bodyStart - 4 >= length) done(status);
    });
    socket.on("error", (error: NodeJS.ErrnoException) => done(error.code ?? "error"));
    socket.on("close", () => done(text === "" ? "closed unanswered" : Number(text.slice(9, 12))));
  });
}

function tally(values: (number | string)[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(String(value), (counts.get(String(value)) ?? 0) + 1);
  return [...counts].map(([value, count]) => `${value} × ${count}`).join(", ");
}

async function keepAliveScenario(sockets: number) {
  const service = await startServiceProcess({ distributed: false });
  let running = true;
  const held = new Set<Socket>();
  let reconnects = 0;
  try {
    const port = Number(new URL(service.origin).port);
    const bundle = readFileSync(
      new URL("../../shared/corpus/vectors/01_happy_minimal.json", import.meta.url),
    );
    const before = processFigures(service.pids.web);
    // Each attacker socket: one free GET /health, then idle on keep-alive; reopened when closed.
    const attack = (): Promise<void> =>
      new Promise((resolve) => {
        const socket = connect({ port, host: "127.0.0.1", localAddress: "127.0.1.1" });
        held.add(socket);
        socket.on("error", () => {});
        socket.once("data", () => resolve());
        socket.once("close", () => {
          held.delete(socket);
          resolve();
          if (running) {
            reconnects += 1;
            setTimeout(() => void attack(), 100);
          }
        });
        socket.once("connect", () => socket.write("GET /health HTTP/1.1\r\nHost: a\r\n\r\n"));
      });
    for (let opened = 0; opened < sockets; opened += BATCH) {
      const batch = Math.min(BATCH, sockets - opened);
      await Promise.all(Array.from({ length: batch }, () => attack()));
    }
    await sleep(1000);
    const statuses: (number | string)[] = [];
    for (let probe = 0; probe < 40; probe += 1) {
      statuses.push(await honestVerify(port, "127.0.1.2", service.apiKey, bundle));
      await sleep(100);
    }
    const health: (number | string)[] = [];
    for (let probe = 0; probe < PROBES; probe += 1) health.push((await probeHealth(port)).status);
    const during = processFigures(service.pids.web);
    console.log(`\nkeep-alive: one address holds ${sockets} idle keep-alive connections`);
    console.log(
      `  attacker connections open while probing: ${held.size} (reconnects: ${reconnects})`,
    );
    console.log(`  honest keyed /verify from a second address: ${tally(statuses)}`);
    console.log(`  /health: ${tally(health)}`);
    console.log(
      `  server: ${before.fds} → ${during.fds} open files, ${before.rssMiB} → ${during.rssMiB} MiB RSS`,
    );
  } finally {
    running = false;
    for (const socket of held) socket.destroy();
    await service.stop();
  }
}

/** `count` bodies that stop one byte short of `length`, from 8 addresses; RSS held and after. */
async function heldBodiesScenario(
  name: string,
  count: number,
  request: (key: string) => string,
  length: number,
) {
  const service = await startServiceProcess({ distributed: false });
  try {
    const port = Number(new URL(service.origin).port);
    const body = Buffer.alloc(length - 1, 0x20);
    const head = `${request(service.apiKey)}Content-Length: ${length}\r\n\r\n`;
    const before = processFigures(service.pids.web);
    const held: Stalled[] = [];
    for (let opened = 0; opened < count; opened += 50) {
      const batch = Math.min(50, count - opened);
      held.push(
        ...(await Promise.all(
          Array.from({ length: batch }, (_, index) =>
            openFrom(port, `127.0.1.${10 + ((opened + index) % 8)}`, head, body),
          ),
        )),
      );
    }
    await sleep(2000);
    const during = processFigures(service.pids.web);
    const open = held.filter((entry) => !entry.closed).length;
    const statuses = tally(held.map((entry) => entry.status ?? "none"));
    for (const entry of held) entry.socket.destroy();
    await sleep(60_000);
    const after = processFigures(service.pids.web);
    console.log(`\n${name}: ${count} bodies of ${length} bytes declared, all but 1 byte sent`);
    console.log(`  answers: ${statuses}; held open by the server: ${open}`);
    console.log(
      `  server RSS: ${before.rssMiB} MiB idle → ${during.rssMiB} MiB held → ${after.rssMiB} MiB 60 s after they closed`,
    );
  } finally {
    await service.stop();
  }
}

const { values } = parseArgs({
  options: {
    sockets: { type: "string", default: "3000" },
    "max-connections": { type: "string", default: "1000" },
    only: { type: "string", default: "keyless,keyed,capped,keep-alive,mcp-bodies,crystal-bodies" },
  },
});
const only = new Set(values.only.split(","));
const sockets = Number(values.sockets);
const cap = values["max-connections"];
if (!Number.isSafeInteger(sockets) || sockets < 1 || sockets > 15_000) {
  throw new Error("--sockets must be between 1 and 15,000");
}
if (only.has("keyless")) await scenario("keyless", sockets, false, {});
if (only.has("keyed")) await scenario("keyed", sockets, true, {});
if (only.has("capped")) {
  await scenario(`keyed, MAX_CONNECTIONS=${cap}`, sockets, true, { MAX_CONNECTIONS: cap });
}
if (only.has("keep-alive")) await keepAliveScenario(4200);
const MIB = 1024 * 1024;
if (only.has("mcp-bodies")) {
  await heldBodiesScenario(
    "mcp-bodies (anonymous POST /mcp)",
    2000,
    () =>
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n",
    MIB,
  );
}
if (only.has("crystal-bodies")) {
  await heldBodiesScenario(
    "crystal-bodies (keyed POST /crystals)",
    1000,
    (key) =>
      `POST /crystals HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-Key: ${key}\r\nContent-Type: application/json\r\n`,
    4 * MIB,
  );
}
