/**
 * `npm run bench:fleet`: what one request of each type costs the fleet (issue 36, part 3),
 * measured on receiptd in distributed mode against a private Redis and a private PostgreSQL
 * database, then a scale-out measurement and `redis-benchmark` for the command mix. The
 * figures feed docs/capacity.md.
 *
 * Per request type:
 * - counted, one request at a time (so nothing is pipelined across requests): Redis commands
 *   (`INFO commandstats` deltas of the private Redis) and round trips, PostgreSQL statements
 *   and round trips (counting-proxies.ts), less what the idle service does over as long;
 * - loaded (16 connections; batches 4): the CPU per request of each tier from /proc — the web
 *   process's main thread and its other threads, the queue worker process, Redis, and the
 *   PostgreSQL backends of the private database — and the commands per request under load.
 *
 * Scale-out: one web process pinned to core 0 (`taskset -c 0`, CPU_THREADS=1), then two,
 * pinned to cores 0 and 1, the client splitting its connections; alternated, best of each.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { availableParallelism, cpus } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import {
  type CountingProxiesThread,
  type PostgresTraffic,
  type RedisTraffic,
  startCountingProxiesThread,
} from "./counting-proxies.js";
import { batchBody, generatedBundle, settlementBody } from "./fixtures.js";
import { Http1Connection } from "./http1-connection.js";
import { type RequestSpec, runLoad, summarise } from "./load.js";
import { DEFAULT_DATABASE_URL, startServiceProcess } from "./service-process.js";
import { pendingProof, sha256 } from "./support/ots.js";
import { threadCpuSeconds } from "./thread-cpu.js";

const USAGE = `usage: npm run bench:fleet -- [options]

  --quick              short phases (the smoke run)
  --requests N         requests counted one at a time per type (default 200; quick 20)
  --seconds N          loaded seconds per type (default 8; quick 1)
  --scale-seconds N    seconds per scale-out run (default 10; quick 1)
  --scale-rounds N     alternations of 1 and 2 web processes (default 3; quick 1)
  --types a,b,...      only these request types
  --no-scale-out       skip the scale-out measurement
  --no-redis-benchmark skip redis-benchmark
  --out DIR            where fleet-latest.{json,md} go (default bench/results)
  --render FILE        print the tables (and the fleet model) of a recorded fleet-*.json
  -h, --help
`;

// ---------------------------------------------------------------------------------------
// Private servers

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

interface PrivateRedis {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" },
  );
  const client = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 1 });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch (error) {
      client.disconnect();
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  client.disconnect();
  return {
    port,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const text = await redis.info("commandstats");
  const calls = new Map<string, number>();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(match[1]!, Number(match[2]));
  }
  return calls;
}

/** The PostgreSQL backends of one database (not the one asking): their CPU is PostgreSQL's share. */
async function backendPids(admin: pg.Client, database: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    [database],
  );
  return rows.map((row) => row.pid);
}

// ---------------------------------------------------------------------------------------
// Request types

interface Context {
  origin: string;
  apiKey: string;
  internalToken: string;
  run: string;
}

interface RequestType {
  id: string;
  title: string;
  /** What one request carries (bundles of a batch), for per-item figures. */
  items: number;
  connections: number;
  /** Work the service does after the answer (a queue job): counted after a drain wait. */
  queued?: boolean;
  /**
   * Keyless refusals (a 404) are limited per client address (src/access/refusal-buckets.ts,
   * 60 at once): such a type moves to a new loopback address every REQUESTS_PER_ADDRESS.
   */
  manyAddresses?: boolean;
  prepare?(context: Context): Promise<void>;
  request(n: number, context: Context): RequestSpec;
  accept(status: number, body: string): boolean;
}

const JSON_TYPE = { "content-type": "application/json" };
const keyed = (context: Context) => ({ ...JSON_TYPE, "x-svc-key": context.apiKey });
const singles = Array.from({ length: 64 }, (_, i) => Buffer.from(generatedBundle(6, i)));
const batches = Array.from({ length: 4 }, (_, b) =>
  batchBody(Array.from({ length: 50 }, (_, i) => generatedBundle(6, 64 + b * 50 + i))),
);
const trusted = (status: number, body: string) =>
  status === 200 && body.includes('"verdict":"TRUSTED"');

const REQUEST_TYPES: readonly RequestType[] = [
  {
    id: "single",
    title: "single bundle, keyed POST /verify",
    items: 1,
    connections: 16,
    request: (n, context) => ({
      method: "POST",
      path: "/verify",
      headers: keyed(context),
      body: singles[n % singles.length]!,
    }),
    accept: trusted,
  },
  {
    id: "batch-50",
    title: "50-bundle batch, keyed POST /verify",
    items: 50,
    connections: 4,
    request: (n, context) => ({
      method: "POST",
      path: "/verify",
      headers: keyed(context),
      body: batches[n % batches.length]!,
    }),
    accept: (status, body) =>
      status === 200 && body.includes('"count":50,') && !/"verdict":"(?!TRUSTED)/.test(body),
  },
  {
    id: "cache-hit",
    title: "cache hit, keyed POST /verify?cache=1",
    items: 1,
    connections: 16,
    async prepare(context) {
      const answer = await fetch(`${context.origin}/verify?cache=1`, {
        method: "POST",
        headers: keyed(context),
        body: singles[0]!,
      });
      await answer.arrayBuffer();
    },
    request: (_n, context) => ({
      method: "POST",
      path: "/verify?cache=1",
      headers: keyed(context),
      body: singles[0]!,
    }),
    accept: (status, body) => trusted(status, body) && body.includes('"hit":true'),
  },
  {
    id: "anchor-404",
    title: "keyless GET /anchors/{digest}, 404",
    items: 1,
    connections: 16,
    request: (n, context) => ({
      method: "GET",
      path: `/anchors/sha256:${sha256(`fleet missing ${context.run} ${n}`).toString("hex")}`,
    }),
    accept: (status) => status === 404,
    manyAddresses: true,
  },
  {
    id: "anchor-post",
    title: "keyed POST /anchors (queued, stored in PostgreSQL)",
    items: 1,
    connections: 16,
    queued: true,
    request: (n, context) => {
      const digest = sha256(`fleet anchor ${context.run} ${n}`);
      return {
        method: "POST",
        path: "/anchors",
        headers: keyed(context),
        body: JSON.stringify({
          digest: `sha256:${digest.toString("hex")}`,
          proof: pendingProof(digest).toString("base64"),
        }),
      };
    },
    accept: (status) => status === 200 || status === 202,
  },
  {
    id: "settlement",
    title: "POST /payment-receipts (queued, durable)",
    items: 1,
    connections: 32,
    queued: true,
    request: (n, context) => ({
      method: "POST",
      path: "/payment-receipts",
      headers: { ...JSON_TYPE, "x-internal-token": context.internalToken },
      body: settlementBody(context.run, n),
    }),
    accept: (status, body) => status === 200 && body.startsWith('{"stored":true'),
  },
];

// ---------------------------------------------------------------------------------------
// Counting

interface Counters {
  at: number;
  commands: Map<string, number>;
  redis: RedisTraffic;
  postgres: PostgresTraffic;
}

interface Probe {
  redis: Redis;
  proxies: CountingProxiesThread;
}

async function readCounters(probe: Probe): Promise<Counters> {
  const [commands, traffic] = await Promise.all([commandStats(probe.redis), probe.proxies.read()]);
  return { at: performance.now(), commands, ...traffic };
}

interface Delta {
  seconds: number;
  commands: Record<string, number>;
  redisCommands: number;
  redisRoundTrips: number;
  postgresStatements: number;
  postgresRoundTrips: number;
  postgresByVerb: Record<string, number>;
}

/** What the harness's own probe asks Redis for: never the service's. */
const PROBE_COMMANDS = new Set(["info"]);

function delta(before: Counters, after: Counters): Delta {
  const commands: Record<string, number> = {};
  for (const [name, calls] of after.commands) {
    if (PROBE_COMMANDS.has(name)) continue;
    const spent = calls - (before.commands.get(name) ?? 0);
    if (spent > 0) commands[name] = spent;
  }
  const byVerb: Record<string, number> = {};
  for (const [verb, count] of Object.entries(after.postgres.byVerb)) {
    const spent = count - (before.postgres.byVerb[verb] ?? 0);
    if (spent > 0) byVerb[verb] = spent;
  }
  return {
    seconds: (after.at - before.at) / 1000,
    commands,
    redisCommands: Object.values(commands).reduce((sum, calls) => sum + calls, 0),
    // Each INFO the probe sends goes to the private Redis directly, not through the proxy.
    redisRoundTrips: after.redis.roundTrips - before.redis.roundTrips,
    postgresStatements: after.postgres.statements - before.postgres.statements,
    postgresRoundTrips: after.postgres.roundTrips - before.postgres.roundTrips,
    postgresByVerb: byVerb,
  };
}

/** `measured` per request, less the idle service's rate over as long (never below zero). */
function perRequest(measured: Delta, idle: Delta, requests: number) {
  const scale = idle.seconds === 0 ? 0 : measured.seconds / idle.seconds;
  const net = (value: number, background: number) =>
    Math.max(0, (value - background * scale) / requests);
  const commands: Record<string, number> = {};
  for (const [name, calls] of Object.entries(measured.commands)) {
    const value = net(calls, idle.commands[name] ?? 0);
    if (value >= 0.005) commands[name] = round2(value);
  }
  const byVerb: Record<string, number> = {};
  for (const [verb, count] of Object.entries(measured.postgresByVerb)) {
    const value = net(count, idle.postgresByVerb[verb] ?? 0);
    if (value >= 0.005) byVerb[verb] = round2(value);
  }
  return {
    redisCommands: round2(net(measured.redisCommands, idle.redisCommands)),
    redisRoundTrips: round2(net(measured.redisRoundTrips, idle.redisRoundTrips)),
    commands,
    postgresStatements: round2(net(measured.postgresStatements, idle.postgresStatements)),
    postgresRoundTrips: round2(net(measured.postgresRoundTrips, idle.postgresRoundTrips)),
    postgresByVerb: byVerb,
  };
}

const round2 = (value: number) => Math.round(value * 100) / 100;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU seconds of every thread of `pids` (main thread of the first apart), from /proc. */
function cpuOf(pids: readonly number[]): { main: number; other: number } {
  let main = 0;
  let other = 0;
  for (const pid of pids) {
    for (const [tid, seconds] of threadCpuSeconds(pid) ?? new Map<number, number>()) {
      if (tid === pid && pid === pids[0]) main += seconds;
      else other += seconds;
    }
  }
  return { main, other };
}

interface TierPids {
  web: number;
  worker: number;
  redis: number;
  postgres: () => Promise<number[]>;
}

interface CpuPerRequest {
  webMain: number;
  webOther: number;
  worker: number;
  redis: number;
  postgres: number;
}

async function tierCpu(pids: TierPids) {
  const postgresPids = await pids.postgres();
  return {
    web: cpuOf([pids.web]),
    worker: cpuOf([pids.worker]),
    redis: cpuOf([pids.redis]),
    postgres: postgresPids.reduce((sum, pid) => {
      const { main, other } = cpuOf([pid]);
      return sum + main + other;
    }, 0),
  };
}

type TierCpu = Awaited<ReturnType<typeof tierCpu>>;

/**
 * CPU per request of each tier under load, less what the idle service spends over as long
 * (`idle`, scaled from its window to the loaded one): Redis' cron and the queue worker's
 * polls would otherwise be charged to requests, the more the slower the rate.
 */
function cpuPerRequest(
  before: TierCpu,
  after: TierCpu,
  requests: number,
  idle: { before: TierCpu; after: TierCpu; scale: number },
): CpuPerRequest {
  const total = (cpu: { main: number; other: number }) => cpu.main + cpu.other;
  const net = (spent: number, background: number) =>
    Math.max(0, Math.round(((spent - background * idle.scale) * 1e6) / requests));
  return {
    webMain: net(after.web.main - before.web.main, idle.after.web.main - idle.before.web.main),
    webOther: net(after.web.other - before.web.other, idle.after.web.other - idle.before.web.other),
    worker: net(
      total(after.worker) - total(before.worker),
      total(idle.after.worker) - total(idle.before.worker),
    ),
    redis: net(
      total(after.redis) - total(before.redis),
      total(idle.after.redis) - total(idle.before.redis),
    ),
    // Backends come and go with the pools: one that ended takes its CPU with it (an undercount).
    postgres: net(
      Math.max(0, after.postgres - before.postgres),
      Math.max(0, idle.after.postgres - idle.before.postgres),
    ),
  };
}

interface TypeFigures {
  id: string;
  title: string;
  items: number;
  counted: { requests: number } & ReturnType<typeof perRequest>;
  loaded: {
    connections: number;
    seconds: number;
    requests: number;
    errors: number;
    requestsPerSecond: number;
    p99Ms: number;
    cpuMicrosPerRequest: CpuPerRequest;
    redisCommandsPerRequest: number;
    redisRoundTripsPerRequest: number;
    postgresStatementsPerRequest: number;
  };
}

async function measureType(
  type: RequestType,
  context: Context,
  probe: Probe,
  pids: TierPids,
  sizes: { requests: number; seconds: number },
): Promise<TypeFigures> {
  await type.prepare?.(context);
  const addresses = new AddressRotation(type.manyAddresses === true);
  let connection = new Http1Connection(context.origin, 60_000, addresses.next());
  let n = 0;
  const send = async () => {
    if (addresses.due(n + 1)) {
      connection.close();
      connection = new Http1Connection(context.origin, 60_000, addresses.next());
    }
    const spec = type.request(n++, context);
    const answer = await connection.request(spec);
    if (!type.accept(answer.status, answer.body)) {
      throw new Error(`${type.id}: ${answer.status} ${answer.body.slice(0, 300)}`);
    }
  };
  // Warm: connections opened, scripts loaded, statements prepared.
  for (let i = 0; i < 10; i++) await send();
  await sleep(type.queued ? 1_500 : 300);
  const drain = type.queued ? 1_500 : 200;

  const idleStart = await readCounters(probe);
  const idleCpuStart = await tierCpu(pids);
  // The idle service's background (queue polls, flushes), over about a counted run's length.
  await sleep(Math.max(1_000, sizes.requests * 5) + drain);
  const idleCpu = {
    seconds: (performance.now() - idleStart.at) / 1000,
    before: idleCpuStart,
    after: await tierCpu(pids),
  };
  const idle = delta(idleStart, await readCounters(probe));

  // A batch costs fifty bundles' time: a tenth as many are counted.
  const requests = type.items > 1 ? Math.max(10, Math.round(sizes.requests / 10)) : sizes.requests;
  const countedStart = await readCounters(probe);
  for (let i = 0; i < requests; i++) await send();
  await sleep(drain);
  const counted = delta(countedStart, await readCounters(probe));
  connection.close();

  let cpuBefore = await tierCpu(pids);
  let countersBefore = await readCounters(probe);
  let loadStart = performance.now();
  const load = await fleetLoad({
    origin: context.origin,
    connections: type.connections,
    warmupMs: Math.min(1_000, sizes.seconds * 200),
    durationMs: sizes.seconds * 1000,
    request: (i) => type.request(n + i, context),
    accept: (status, body) => type.accept(status, body),
    addresses,
    onMeasureStart: () => {
      loadStart = performance.now();
      void tierCpu(pids).then((cpu) => {
        cpuBefore = cpu;
      });
      void readCounters(probe).then((counters) => {
        countersBefore = counters;
      });
    },
  });
  n += load.requests + 10_000;
  if (load.firstError !== undefined) console.error(`  ${type.id}: first error: ${load.firstError}`);
  if (type.queued) await sleep(drain);
  const cpuAfter = await tierCpu(pids);
  const loadedDelta = delta(countersBefore, await readCounters(probe));
  const loadedRequests = Math.max(1, load.requests);
  return {
    id: type.id,
    title: type.title,
    items: type.items,
    counted: { requests, ...perRequest(counted, idle, requests) },
    loaded: {
      connections: type.connections,
      seconds: round2(load.seconds),
      requests: load.requests,
      errors: load.errors,
      requestsPerSecond: Math.round((load.requests - load.errors) / load.seconds),
      p99Ms: round2(load.latencyMs.p99),
      cpuMicrosPerRequest: cpuPerRequest(cpuBefore, cpuAfter, loadedRequests, {
        ...idleCpu,
        scale: (performance.now() - loadStart) / 1000 / idleCpu.seconds,
      }),
      redisCommandsPerRequest: round2(loadedDelta.redisCommands / loadedRequests),
      redisRoundTripsPerRequest: round2(loadedDelta.redisRoundTrips / loadedRequests),
      postgresStatementsPerRequest: round2(loadedDelta.postgresStatements / loadedRequests),
    },
  };
}

/** Requests one loopback client address sends, under the refusal bucket's burst of 60. */
const REQUESTS_PER_ADDRESS = 50;

/** Client addresses 127.1.0.1, 127.1.0.3, …: a new one per REQUESTS_PER_ADDRESS requests of a connection. */
class AddressRotation {
  readonly #enabled: boolean;
  #addresses = 0;

  constructor(enabled: boolean) {
    this.#enabled = enabled;
  }

  /** A connection's turn: whether its `sent`-th request (from 1) needs a new address. */
  due(sent: number): boolean {
    return this.#enabled && sent % REQUESTS_PER_ADDRESS === 0;
  }

  next(): { localAddress?: string } {
    if (!this.#enabled) return {};
    const k = this.#addresses++;
    return {
      localAddress: `127.${1 + ((k >> 15) & 0x7f)}.${(k >> 7) & 0xff}.${((k & 0x7f) << 1) + 1}`,
    };
  }
}

/**
 * load.ts's closed loop, with connections that move to a new client address when the type
 * asks for it (AddressRotation); only requests started in the measured window are counted.
 */
async function fleetLoad(options: {
  origin: string;
  connections: number;
  warmupMs: number;
  durationMs: number;
  request(n: number): RequestSpec;
  accept(status: number, body: string): boolean;
  addresses: AddressRotation;
  onMeasureStart(): void;
}) {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let sent = 0;
  const measureFrom = performance.now() + options.warmupMs;
  const stopAt = measureFrom + options.durationMs;
  const measureStart = setTimeout(options.onMeasureStart, options.warmupMs);
  const loop = async () => {
    let connection = new Http1Connection(options.origin, 120_000, options.addresses.next());
    let mine = 0;
    for (;;) {
      const began = performance.now();
      if (began >= stopAt) break;
      if (options.addresses.due(++mine)) {
        connection.close();
        connection = new Http1Connection(options.origin, 120_000, options.addresses.next());
      }
      const spec = options.request(sent++);
      let failure: string | undefined;
      try {
        const answer = await connection.request(spec);
        if (!options.accept(answer.status, answer.body)) {
          failure = `${answer.status} ${answer.body.slice(0, 300)}`;
        }
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error);
      }
      if (began < measureFrom) continue;
      latencies.push(performance.now() - began);
      if (failure !== undefined) {
        errors++;
        firstError ??= `${spec.method} ${spec.path}: ${failure}`;
      }
    }
    connection.close();
  };
  await Promise.all(Array.from({ length: options.connections }, loop));
  clearTimeout(measureStart);
  return {
    requests: latencies.length,
    errors,
    seconds: (performance.now() - measureFrom) / 1000,
    latencyMs: summarise(latencies),
    firstError,
  };
}

// ---------------------------------------------------------------------------------------
// Scale-out

interface ScaleRun {
  webs: number;
  bundlesPerSecond: number;
  errors: number;
  /** Web processes' CPU (all threads) per bundle, µs. */
  cpuMicrosPerBundle: number;
}

async function scaleOutRun(
  webs: { origin: string; pid: number }[],
  apiKey: string,
  seconds: number,
): Promise<ScaleRun> {
  const context: Context = { origin: "", apiKey, internalToken: "", run: "" };
  const batch = REQUEST_TYPES.find((type) => type.id === "batch-50")!;
  let cpuBefore = 0;
  const cpuNow = () =>
    webs.reduce((sum, web) => {
      const { main, other } = cpuOf([web.pid]);
      return sum + main + other;
    }, 0);
  let started = 0;
  const loads = await Promise.all(
    webs.map((web) =>
      runLoad({
        origin: web.origin,
        // Enough batches in flight to keep one core's thread busy while the main thread reads.
        connections: 4,
        warmupMs: Math.min(2_000, seconds * 200),
        durationMs: seconds * 1000,
        request: (n) => batch.request(n, { ...context, origin: web.origin }),
        accept: batch.accept,
        onMeasureStart: () => {
          if (started++ === 0) cpuBefore = cpuNow();
        },
      }),
    ),
  );
  const cpu = cpuNow() - cpuBefore;
  const bundles = loads.reduce((sum, load) => sum + (load.requests - load.errors) * 50, 0);
  return {
    webs: webs.length,
    bundlesPerSecond: Math.round(
      loads.reduce((sum, load) => sum + ((load.requests - load.errors) * 50) / load.seconds, 0),
    ),
    errors: loads.reduce((sum, load) => sum + load.errors, 0),
    cpuMicrosPerBundle: bundles === 0 ? 0 : Math.round((cpu * 1e6) / bundles),
  };
}

async function measureScaleOut(
  redisUrl: string,
  databaseUrl: string,
  rounds: number,
  seconds: number,
): Promise<{ runs: ScaleRun[]; ratio: number; ratioOfMedians: number }> {
  const runs: ScaleRun[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const cpuSets of [["0"], ["0", "1"]]) {
      console.log(`  scale-out: ${cpuSets.length} web process(es), round ${round + 1} …`);
      try {
        const service = await startServiceProcess({
          distributed: true,
          redisUrl,
          databaseUrl,
          webCpuSets: cpuSets,
          env: { CPU_THREADS: "1" },
        });
        try {
          runs.push(await scaleOutRun(service.webs, service.apiKey, seconds));
        } finally {
          await service.stop();
        }
      } catch (error) {
        // A pinned process on a busy shared core may not start in time: a missing run, not
        // a lost result.
        console.error(
          `  scale-out run failed: ${error instanceof Error ? error.message.split("\n")[0] : error}`,
        );
      }
    }
  }
  const rates = (webs: number) =>
    runs.filter((run) => run.webs === webs).map((run) => run.bundlesPerSecond);
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
  };
  if (rates(1).length === 0 || rates(2).length === 0) return { runs, ratio: 0, ratioOfMedians: 0 };
  return {
    runs,
    ratio: round2(Math.max(...rates(2)) / Math.max(...rates(1))),
    ratioOfMedians: round2(median(rates(2)) / median(rates(1))),
  };
}

// ---------------------------------------------------------------------------------------
// redis-benchmark

interface RedisBenchmarkRow {
  test: string;
  pipeline: number;
  requestsPerSecond: number;
}

/** A cap-like script: what the service's Lua does most (count, expire, answer). */
const CAP_SCRIPT =
  "local n = redis.call('INCRBY', KEYS[1], ARGV[1]) if n == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], 86400000) end return n";

function redisBenchmark(port: number, requests: number): RedisBenchmarkRow[] {
  const sha = spawnSync("redis-cli", ["-p", String(port), "SCRIPT", "LOAD", CAP_SCRIPT], {
    encoding: "utf8",
  }).stdout.trim();
  const rows: RedisBenchmarkRow[] = [];
  for (const pipeline of [1, 16]) {
    const common = ["-p", String(port), "-n", String(requests), "-c", "16", "-P", String(pipeline)];
    const parse = (output: string) => {
      for (const line of output.trim().split("\n").slice(1)) {
        const [test, rate] = line.split(",").map((cell) => cell.replaceAll('"', ""));
        if (test !== undefined && rate !== undefined) {
          rows.push({ test, pipeline, requestsPerSecond: Math.round(Number(rate)) });
        }
      }
    };
    parse(
      spawnSync(
        "redis-benchmark",
        [...common, "-r", "100000", "--csv", "-t", "get,set,incr,zadd,lpush"],
        {
          encoding: "utf8",
        },
      ).stdout,
    );
    const evalsha = spawnSync(
      "redis-benchmark",
      [...common, "-r", "100000", "--csv", "EVALSHA", sha, "1", "cap:__rand_int__", "1"],
      { encoding: "utf8" },
    ).stdout;
    parse(evalsha.replace(/^("EVALSHA[^"]*")/m, '"EVALSHA (cap script)"'));
  }
  return rows;
}

// ---------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      requests: { type: "string" },
      seconds: { type: "string" },
      "scale-seconds": { type: "string" },
      "scale-rounds": { type: "string" },
      types: { type: "string" },
      "no-scale-out": { type: "boolean", default: false },
      "no-redis-benchmark": { type: "boolean", default: false },
      out: { type: "string" },
      render: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.render !== undefined) {
    console.log(renderFleet(JSON.parse(readFileSync(values.render, "utf8"))));
    return 0;
  }
  const number = (text: string | undefined, fallback: number) =>
    text === undefined ? fallback : Number(text);
  const sizes = {
    requests: number(values.requests, values.quick ? 20 : 200),
    seconds: number(values.seconds, values.quick ? 1 : 8),
  };
  const wanted = values.types?.split(",");
  const types = REQUEST_TYPES.filter((type) => wanted === undefined || wanted.includes(type.id));
  const run = randomBytes(4).toString("hex");
  const database = `receiptd_fleet_${run}`;
  const adminUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const pgPort = Number(new URL(adminUrl).port || 5432);
  const databaseUrlVia = (port: number) => {
    const url = new URL(adminUrl);
    url.port = String(port);
    url.pathname = `/${database}`;
    return url.toString();
  };
  let redis: PrivateRedis | undefined;
  let probeRedis: Redis | undefined;
  let proxies: CountingProxiesThread | undefined;
  const figures: TypeFigures[] = [];
  let scaleOut: Awaited<ReturnType<typeof measureScaleOut>> | undefined;
  let benchmark: RedisBenchmarkRow[] = [];
  try {
    await admin.query(`CREATE DATABASE ${database}`);
    redis = await startPrivateRedis();
    probeRedis = new Redis({ port: redis.port, maxRetriesPerRequest: 1 });
    proxies = await startCountingProxiesThread(redis.port, pgPort);
    const probe: Probe = { redis: probeRedis, proxies };
    console.log("starting receiptd (distributed, private Redis and database, counted) …");
    const service = await startServiceProcess({
      distributed: true,
      redisUrl: `redis://127.0.0.1:${proxies.redisPort}`,
      databaseUrl: databaseUrlVia(proxies.postgresPort),
      // Keyless requests are measured, not capped.
      env: {
        ANON_DAILY_CAP: "1000000000",
        ANON_ADDRESS_DAILY_CAP: "1000000000",
        ANON_NETWORK_DAILY_CAP: "1000000000",
      },
    });
    try {
      const context: Context = {
        origin: service.origin,
        apiKey: service.apiKey,
        internalToken: service.internalToken,
        run,
      };
      const pids: TierPids = {
        web: service.pids.web,
        worker: service.pids.worker!,
        redis: redis.pid,
        postgres: () => backendPids(admin, database),
      };
      for (const type of types) {
        console.log(`  ${type.id} …`);
        figures.push(await measureType(type, context, probe, pids, sizes));
      }
    } finally {
      await service.stop();
    }
    if (!values["no-redis-benchmark"]) {
      console.log("redis-benchmark on the private Redis …");
      benchmark = redisBenchmark(redis.port, values.quick ? 10_000 : 200_000);
    }
    if (!values["no-scale-out"]) {
      if (availableParallelism() < 2) {
        console.log("scale-out needs two cores: skipped");
      } else {
        scaleOut = await measureScaleOut(
          `redis://127.0.0.1:${redis.port}`,
          databaseUrlVia(pgPort),
          number(values["scale-rounds"], values.quick ? 1 : 3),
          number(values["scale-seconds"], values.quick ? 1 : 10),
        );
      }
    }
  } finally {
    probeRedis?.disconnect();
    await proxies?.close();
    await redis?.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }

  const result = {
    startedAt: new Date().toISOString(),
    quick: values.quick,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      node: process.version,
      loadAverage: (await import("node:os")).loadavg().map(round2),
    },
    sizes,
    types: figures,
    ...(scaleOut === undefined ? {} : { scaleOut }),
    redisBenchmark: benchmark,
  };
  const outDir =
    values.out ??
    fileURLToPath(
      new URL(
        import.meta.url.includes("/dist/bench/") ? "../../bench/results/" : "./results/",
        import.meta.url,
      ),
    );
  mkdirSync(outDir, { recursive: true });
  const markdown = renderFleet(result);
  writeFileSync(join(outDir, "fleet-latest.json"), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(join(outDir, "fleet-latest.md"), markdown);
  console.log(`\n${markdown}`);
  const failed = figures.filter((figure) => figure.loaded.errors > 0);
  for (const figure of failed)
    console.error(`FAILED: ${figure.id}: ${figure.loaded.errors} errors`);
  return failed.length > 0 ? 1 : 0;
}

function renderFleet(result: {
  startedAt: string;
  machine: { cpus: number; cpuModel: string; node: string; loadAverage: number[] };
  types: TypeFigures[];
  scaleOut?: { runs: ScaleRun[]; ratio: number; ratioOfMedians: number };
  redisBenchmark: RedisBenchmarkRow[];
}): string {
  const whole = (value: number) => Math.round(value).toLocaleString("en-US");
  const lines = [
    `fleet bench ${result.startedAt}: ${result.machine.cpus} × ${result.machine.cpuModel}, node ${result.machine.node}, load average ${result.machine.loadAverage.join(" ")}`,
    "",
    "Per request, counted one at a time (idle background subtracted):",
    "",
    "| request | Redis commands | Redis round trips | commands | PG statements | PG round trips | statements |",
    "| --- | ---: | ---: | --- | ---: | ---: | --- |",
    ...result.types.map((type) => {
      const mix = Object.entries(type.counted.commands)
        .sort((a, b) => b[1] - a[1])
        .map(([name, calls]) => `${name} ${calls}`)
        .join(", ");
      const verbs = Object.entries(type.counted.postgresByVerb)
        .sort((a, b) => b[1] - a[1])
        .map(([verb, count]) => `${verb} ${count}`)
        .join(", ");
      return `| ${type.title} | ${type.counted.redisCommands} | ${type.counted.redisRoundTrips} | ${mix} | ${type.counted.postgresStatements} | ${type.counted.postgresRoundTrips} | ${verbs} |`;
    }),
    "",
    "Under load, CPU µs per request by tier (from /proc):",
    "",
    "| request | conns | req/s | p99 ms | web main | web other | worker | Redis | PostgreSQL | Redis cmds/req | Redis RTT/req | PG stmts/req |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...result.types.map((type) => {
      const { loaded } = type;
      const cpu = loaded.cpuMicrosPerRequest;
      return `| ${type.title} | ${loaded.connections} | ${whole(loaded.requestsPerSecond)} | ${loaded.p99Ms} | ${whole(cpu.webMain)} | ${whole(cpu.webOther)} | ${whole(cpu.worker)} | ${whole(cpu.redis)} | ${whole(cpu.postgres)} | ${loaded.redisCommandsPerRequest} | ${loaded.redisRoundTripsPerRequest} | ${loaded.postgresStatementsPerRequest} |`;
    }),
    "",
  ];
  if (result.scaleOut !== undefined) {
    lines.push(
      "Scale-out, 50-bundle batches, CPU_THREADS=1, each web process pinned to one core (taskset):",
      "",
      "| web processes | bundles/s | errors | web CPU µs per bundle |",
      "| ---: | ---: | ---: | ---: |",
      ...result.scaleOut.runs.map(
        (run) =>
          `| ${run.webs} | ${whole(run.bundlesPerSecond)} | ${run.errors} | ${whole(run.cpuMicrosPerBundle)} |`,
      ),
      "",
      `ratio, best of each: ×${result.scaleOut.ratio}; of the medians: ×${result.scaleOut.ratioOfMedians} (goal ≥ ×1.8)`,
      "",
    );
  }
  lines.push(...renderCapacity(result.types));
  if (result.redisBenchmark.length > 0) {
    lines.push(
      "redis-benchmark, 16 connections, on the private Redis:",
      "",
      "| command | pipeline | requests/s |",
      "| --- | ---: | ---: |",
      ...result.redisBenchmark.map(
        (row) => `| ${row.test} | ${row.pipeline} | ${whole(row.requestsPerSecond)} |`,
      ),
      "",
    );
  }
  return lines.join("\n");
}

/** The fleet targets of issue 36: a request type and its rate. */
const TARGETS = [
  { type: "single", rate: 50_000, what: "50,000 single bundles/s" },
  {
    type: "batch-50",
    rate: 2_000,
    what: "100,000 bundles/s in 50-bundle batches (2,000 batches/s)",
  },
  { type: "settlement", rate: 10_000, what: "10,000 settlements/s" },
] as const;

/** A single-threaded Redis node is planned at 70% of its one core, leaving room for bursts. */
const REDIS_CORE_BUDGET = 0.7;

interface FleetPlan {
  target: string;
  webCores: number;
  workerCores: number;
  redisCommandsPerSecond: number;
  redisRoundTripsPerSecond: number;
  redisCores: number;
  /** The rate one Redis node carries at REDIS_CORE_BUDGET. */
  oneRedisNodeRate: number;
  redisMasters: number;
  postgresStatementsPerSecond: number;
  postgresWritesPerSecond: number;
  postgresCores: number;
}

/**
 * The fleet for each target, from one run's figures: CPU per request under load (the loaded
 * phase), Redis and PostgreSQL operations per request (counted one at a time; round trips
 * under load, where concurrent requests share them). Linear in the rate: what the
 * scale-out measurement checks for the web tier.
 */
function fleetPlans(types: readonly TypeFigures[]): FleetPlan[] {
  const plans: FleetPlan[] = [];
  for (const target of TARGETS) {
    const figures = types.find((type) => type.id === target.type);
    if (figures === undefined) continue;
    const cpu = figures.loaded.cpuMicrosPerRequest;
    const cores = (micros: number) => (target.rate * micros) / 1e6;
    const writes = ["INSERT", "UPDATE", "DELETE"].reduce(
      (sum, verb) => sum + (figures.counted.postgresByVerb[verb] ?? 0),
      0,
    );
    const redisCores = cores(cpu.redis);
    plans.push({
      target: target.what,
      webCores: cores(cpu.webMain + cpu.webOther),
      // The queue worker's CPU only counts for queued work; otherwise it is its idle polling.
      workerCores: target.type === "settlement" ? cores(cpu.worker) : 0,
      redisCommandsPerSecond: target.rate * figures.counted.redisCommands,
      redisRoundTripsPerSecond: target.rate * figures.loaded.redisRoundTripsPerRequest,
      redisCores,
      oneRedisNodeRate:
        cpu.redis === 0 ? Number.POSITIVE_INFINITY : (REDIS_CORE_BUDGET * 1e6) / cpu.redis,
      redisMasters: Math.max(1, Math.ceil(redisCores / REDIS_CORE_BUDGET)),
      postgresStatementsPerSecond: target.rate * figures.counted.postgresStatements,
      postgresWritesPerSecond: target.rate * writes,
      postgresCores: cores(cpu.postgres),
    });
  }
  return plans;
}

function renderCapacity(types: readonly TypeFigures[]): string[] {
  const plans = fleetPlans(types);
  if (plans.length === 0) return [];
  const whole = (value: number) =>
    Number.isFinite(value) ? Math.round(value).toLocaleString("en-US") : "∞";
  const one = (value: number) => value.toFixed(1);
  return [
    `The fleet, linear in these figures (a Redis node planned at ${REDIS_CORE_BUDGET * 100}% of its core):`,
    "",
    "| target | web cores | queue worker cores | Redis commands/s | Redis round trips/s | Redis cores | one Redis node carries | Redis masters (cluster) | PG statements/s | PG writes/s | PG cores |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...plans.map(
      (plan) =>
        `| ${plan.target} | ${one(plan.webCores)} | ${one(plan.workerCores)} | ${whole(plan.redisCommandsPerSecond)} | ${whole(plan.redisRoundTripsPerSecond)} | ${one(plan.redisCores)} | ${whole(plan.oneRedisNodeRate)}/s | ${plan.redisMasters} | ${whole(plan.postgresStatementsPerSecond)} | ${whole(plan.postgresWritesPerSecond)} | ${one(plan.postgresCores)} |`,
    ),
    "",
  ];
}

process.exitCode = await main();
