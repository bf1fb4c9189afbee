/**
 * The fair CPU pool's figures (issue 32), one source tree at a time:
 *
 *   node --import tsx bench/fair-pool-flood.ts [source root, default this checkout]
 *
 * Embedded, 2 threads, two keys, over 127.0.0.1. First one key alone sends 1 MiB batches of 50
 * bundles on 16 connections (the single-principal throughput, which fairness must not cut);
 * then it floods on `FLOOD_CONNECTIONS` connections while another key, from 127.0.0.2, sends
 * one bundle at a time. Prints the honest latencies and the flood's per-task thread time, so
 * the honest wait reads in tasks. Run it on the tree before and after, side by side.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { batchOfSize } from "./fixtures.js";

const root = resolve(process.argv[2] ?? ".");
const SOLO_SECONDS = Number(process.env.SOLO_SECONDS ?? 10);
const FLOOD_SECONDS = Number(process.env.FLOOD_SECONDS ?? 15);
const FLOOD_CONNECTIONS = Number(process.env.FLOOD_CONNECTIONS ?? 16);

const { loadConfig } = await import(pathToFileURL(join(root, "src/service/config.ts")).href);
const { buildApp } = await import(pathToFileURL(join(root, "src/service/app.ts")).href);

const FLOOD_BODY = batchOfSize(1024 * 1024 - 4096, 50);
const HONEST_BODY = readFileSync(
  new URL("../../shared/corpus/vectors/02_happy_full.json", import.meta.url),
);

/** `SOLO_BODY=single`: the lone key sends one small bundle per request (micro-batched). */
const SOLO_BODY = process.env.SOLO_BODY === "single" ? HONEST_BODY : FLOOD_BODY;

const dataDir = await mkdtemp(join(tmpdir(), "receiptd-fair-bench-"));
const config = loadConfig({}, { dataDir, logLevel: "silent", cpuPool: { threads: 2 } });
const app = await buildApp(config, {});
const newKey = async (name: string) =>
  (await app.accessServices.keys.create({ name, dailyCap: 1_000_000_000 })).key as string;
const floodKey = await newKey("flood");
const honestKey = await newKey("honest");
await app.listen({ host: "127.0.0.1", port: 0 });
const { port } = app.server.address() as AddressInfo;

interface Result {
  status: number;
  ms: number;
}

function post(agent: Agent, key: string, body: Buffer, localAddress: string): Promise<Result> {
  const started = performance.now();
  return new Promise((done, fail) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/verify",
        agent,
        localAddress,
        headers: { "x-svc-key": key, "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        res.on("end", () => done({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    req.on("error", fail);
    req.end(body);
  });
}

/** `connections` closed loops of `body` until `until`; their results. */
async function loops(
  connections: number,
  key: string,
  body: Buffer,
  localAddress: string,
  until: number,
): Promise<Result[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const results: Result[] = [];
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) results.push(await post(agent, key, body, localAddress));
    }),
  );
  agent.destroy();
  return results;
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};

// The single principal alone: 16 connections of 1 MiB batches (or single bundles).
const solo = await loops(
  16,
  floodKey,
  SOLO_BODY,
  "127.0.0.1",
  performance.now() + SOLO_SECONDS * 1000,
);
const soloOk = solo.filter((r) => r.status === 200).length;
// Two threads busy all along: the thread time one solo task takes (a flood task's, alone).
const taskMs = (2 * SOLO_SECONDS * 1000) / Math.max(1, soloOk);

const until = performance.now() + FLOOD_SECONDS * 1000;
const [flood, honest] = await Promise.all([
  loops(FLOOD_CONNECTIONS, floodKey, FLOOD_BODY, "127.0.0.1", until),
  loops(1, honestKey, HONEST_BODY, "127.0.0.2", until),
]);
const honestMs = honest.filter((r) => r.status === 200).map((r) => r.ms);
const p50 = quantile(honestMs, 0.5);
const p99 = quantile(honestMs, 0.99);
const figures = {
  root,
  soloBody: SOLO_BODY === FLOOD_BODY ? "batch-50, 1 MiB" : "one bundle",
  soloRequestsPerSecond: +(soloOk / SOLO_SECONDS).toFixed(2),
  soloStatuses: countBy(solo),
  floodTaskMs: Math.round(taskMs),
  floodConnections: FLOOD_CONNECTIONS,
  floodStatuses: countBy(flood),
  honestAnswers: honest.length,
  honestStatuses: countBy(honest),
  honestP50Ms: Math.round(p50),
  honestP99Ms: Math.round(p99),
  honestMaxMs: Math.round(Math.max(...honestMs)),
  honestP50InTasks: +(p50 / taskMs).toFixed(2),
  honestP99InTasks: +(p99 / taskMs).toFixed(2),
};
console.log(JSON.stringify(figures));
await app.close();
await rm(dataDir, { recursive: true, force: true });

function countBy(results: Result[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status } of results) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}
