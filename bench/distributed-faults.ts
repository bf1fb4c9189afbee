/**
 * Issue 34's attack on distributed mode, rerun (docs/benchmarks/2026-11-29-distributed-attacks.md):
 * two `receiptd serve` and one `receiptd worker` (bench/service-process.ts, the attack bench's
 * launcher) on a private redis-server (AOF always, noeviction) and a PostgreSQL schema of
 * their own. It measures, in order:
 * - (a) Redis bytes per queued request: the worker down, `--anchors` maximum-size anchors
 *   (97 attestations of 8,000 random bytes, a 1.04 MB body) posted at once; `used_memory`'s
 *   delta over the writes queued (202);
 * - (b) PostgreSQL bytes per stored anchor byte: the worker started, the backlog drained;
 *   the schema's `pg_total_relation_size` delta over the proof bytes stored;
 * - (c) latency during a `--stall-seconds` SIGSTOP of Redis: a keyed `POST /verify`, `GET
 *   /info`, `GET /health` and a keyless anchor read, each every 200 ms alternating the webs
 *   (they need no Redis: goal ≤ 50 ms), and a small `POST /anchors` (it needs Redis: a fast
 *   503 is the goal); p50 and p99 idle, then during the stall;
 * - (d) Redis commands per keyless 404: `INFO commandstats` over 50 `GET /anchors/<unknown>`
 *   without a key, less the same interval idle.
 *
 * With `--kill-web` it measures only (e): 40 small anchors posted by 4 clients, one after
 * another, to the second web, which is sent SIGKILL 1 s in; every anchor acknowledged (200 or 202) must
 * be readable once the worker has drained, and what was not acknowledged is counted.
 *
 *   node --import tsx bench/distributed-faults.ts [--checkout DIR] [--anchors 6] [--stall-seconds 20] [--kill-web]
 *
 * `--checkout` runs another checkout's built `dist/` (the commit before issue 34's work).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import { DEFAULT_DATABASE_URL, startServiceProcess } from "./service-process.js";
import { largeProof, pendingProof, sha256 } from "./support/ots.js";

const { values } = parseArgs({
  options: {
    checkout: { type: "string" },
    anchors: { type: "string", default: "6" },
    "stall-seconds": { type: "string", default: "20" },
    "kill-web": { type: "boolean", default: false },
  },
});
const repoRoot = new URL(
  import.meta.url.includes("/dist/bench/") ? "../../" : "../",
  import.meta.url,
);
const HONEST_BODY = readFileSync(new URL("../shared/corpus/vectors/02_happy_full.json", repoRoot));
/** Ends the run early (`--kill-web`), through the cleanup. */
class Done extends Error {}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** The report's Redis: AOF with fsync on every write, and no eviction. */
async function startRedis(): Promise<{ url: string; child: ChildProcess; dir: string }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "receiptd-faults-redis-"));
  const child = spawn(
    "/usr/bin/redis-server",
    [
      ...["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir],
      ...["--appendonly", "yes", "--appendfsync", "always", "--maxmemory-policy", "noeviction"],
    ],
    { stdio: "ignore" },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 200; attempt++) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { url, child, dir };
    } catch {
      probe.disconnect();
      await sleep(25);
    }
  }
  throw new Error("redis-server did not start");
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

interface Sample {
  ms: number;
  status: number | string;
}

async function timed(url: string, init: RequestInit = {}): Promise<Sample & { body: string }> {
  const started = performance.now();
  try {
    const answer = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    const body = await answer.text();
    return { ms: performance.now() - started, status: answer.status, body };
  } catch {
    return { ms: performance.now() - started, status: "error", body: "" };
  }
}

function summary(samples: readonly Sample[]): string {
  const sorted = samples.map((sample) => sample.ms).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const { status } of samples) statuses[status] = (statuses[status] ?? 0) + 1;
  return `n ${samples.length}, p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms, ${JSON.stringify(statuses)}`;
}

function usedMemory(info: string): number {
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

function commandCalls(info: string): number {
  let calls = 0;
  for (const match of info.matchAll(/calls=(\d+)/g)) calls += Number(match[1]);
  return calls;
}

const redis = await startRedis();
const admin = new Redis(redis.url);
const service = await startServiceProcess({
  distributed: true,
  redisUrl: redis.url,
  webs: 2,
  worker: values["kill-web"],
  ...(values.checkout === undefined ? {} : { checkout: values.checkout }),
  keys: [
    { name: "honest", cap: 1_000_000 },
    { name: "writer", cap: 1_000_000 },
  ],
});
const database = new pg.Client({ connectionString: DEFAULT_DATABASE_URL });
await database.connect();
const schemaBytes = async () =>
  Number(
    (
      await database.query(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')",
        [service.databaseSchema],
      )
    ).rows[0].bytes,
  );
const honestKey = service.keys.honest!;
const writerKey = service.keys.writer!;
const [webA, webB] = service.webs.map((each) => each.origin) as [string, string];
const postAnchor = (origin: string, proof: Buffer, digest: Buffer, key: string) =>
  timed(`${origin}/anchors`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-svc-key": key },
    body: JSON.stringify({
      digest: `sha256:${digest.toString("hex")}`,
      proof: proof.toString("base64"),
    }),
  });

/** (e) kill -9 of a web with writes in flight. */
async function killWeb(): Promise<void> {
  const digests = Array.from({ length: 40 }, () => randomBytes(32));
  const answers = digests.map((digest) =>
    postAnchor(webB, pendingProof(digest), digest, writerKey),
  );
  await sleep(150);
  process.kill(service.webs[1]!.pid, "SIGKILL");
  const settled = await Promise.all(answers);
  let acknowledged = 0;
  let lost = 0;
  let storedUnacknowledged = 0;
  const deadline = Date.now() + 60_000;
  for (const [index, digest] of digests.entries()) {
    const url = `${webA}/anchors/sha256:${digest.toString("hex")}`;
    const status = settled[index]!.status;
    if (status === 200 || status === 202) {
      acknowledged++;
      while ((await timed(url)).status !== 200) {
        if (Date.now() > deadline) {
          lost++;
          break;
        }
        await sleep(250);
      }
    } else if ((await timed(url)).status === 200) storedUnacknowledged++;
  }
  console.log(
    `(e) kill -9 of a web 1 s into 40 anchors (4 clients): ${summary(settled)}; ${acknowledged} acknowledged, ${lost} of them not stored; ${storedUnacknowledged} unacknowledged but stored (the client retries those by idempotency)`,
  );
}

try {
  console.log(`build: ${values.checkout ?? "this checkout"}`);
  if (values["kill-web"]) {
    await killWeb();
    throw new Done();
  }
  // (a) The worker down: what a queued maximum-size anchor costs Redis.
  const count = Number(values.anchors);
  const large = Array.from({ length: count }, () => {
    const digest = randomBytes(32);
    return { digest, proof: largeProof(digest) };
  });
  await sleep(1000);
  const memoryBefore = usedMemory(await admin.info("memory"));
  const pgBefore = await schemaBytes();
  const queued = await Promise.all(
    large.map(({ digest, proof }, index) =>
      postAnchor(index % 2 === 0 ? webA : webB, proof, digest, writerKey),
    ),
  );
  const memoryAfter = usedMemory(await admin.info("memory"));
  const accepted = queued.filter((answer) => answer.status === 202).length;
  console.log(`(a) ${count} large anchors, worker down: ${summary(queued)}`);
  console.log(
    `(a) Redis used_memory ${memoryBefore} → ${memoryAfter}: ${((memoryAfter - memoryBefore) / Math.max(accepted, 1)).toFixed(0)} bytes per queued request (body ${(large[0]!.proof.length * 4) / 3} bytes of base64)`,
  );

  // (b) The worker drains the backlog into PostgreSQL.
  service.startWorker();
  let proofBytes = 0;
  for (const [index, { digest, proof }] of large.entries()) {
    if (queued[index]!.status !== 202 && queued[index]!.status !== 200) continue;
    const deadline = Date.now() + 120_000;
    while ((await timed(`${webA}/anchors/sha256:${digest.toString("hex")}`)).status !== 200) {
      if (Date.now() > deadline) throw new Error("a queued anchor was never stored");
      await sleep(250);
    }
    proofBytes += proof.length;
  }
  await sleep(1000);
  const pgAfter = await schemaBytes();
  console.log(
    `(b) PostgreSQL ${pgBefore} → ${pgAfter} bytes for ${proofBytes} proof bytes: ${((pgAfter - pgBefore) / Math.max(proofBytes, 1)).toFixed(2)} bytes per stored anchor byte`,
  );

  // (c) Idle, then a Redis stall: the requests that need no Redis, and the write that does.
  const small = sha256("distributed-faults small anchor");
  await postAnchor(webA, pendingProof(small), small, writerKey);
  const kinds = {
    "POST /verify (keyed)": (origin: string) =>
      timed(`${origin}/verify`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-key": honestKey },
        body: HONEST_BODY,
      }),
    "GET /info (keyed)": (origin: string) =>
      timed(`${origin}/info`, { headers: { "x-svc-key": honestKey } }),
    "GET /health": (origin: string) => timed(`${origin}/health`),
    "GET /anchors/{d} (keyless)": (origin: string) =>
      timed(`${origin}/anchors/sha256:${small.toString("hex")}`),
    "POST /anchors (needs Redis)": (origin: string) => {
      const digest = randomBytes(32);
      return postAnchor(origin, pendingProof(digest), digest, writerKey);
    },
  };
  const watch = async (seconds: number) => {
    const samples: Record<string, Sample[]> = {};
    const until = Date.now() + seconds * 1000;
    await Promise.all(
      Object.entries(kinds).map(async ([name, send]) => {
        const list: Sample[] = [];
        samples[name] = list;
        for (let n = 0; Date.now() < until; n++) {
          const tick = Date.now();
          list.push(await send(n % 2 === 0 ? webA : webB));
          await sleep(Math.max(0, 200 - (Date.now() - tick)));
        }
      }),
    );
    return samples;
  };
  const idle = await watch(5);
  for (const [name, samples] of Object.entries(idle))
    console.log(`(c) idle ${name}: ${summary(samples)}`);
  const stallSeconds = Number(values["stall-seconds"]);
  redis.child.kill("SIGSTOP");
  const stalled = await watch(stallSeconds);
  redis.child.kill("SIGCONT");
  for (const [name, samples] of Object.entries(stalled)) {
    console.log(`(c) ${stallSeconds} s stall ${name}: ${summary(samples)}`);
  }

  // (d) Redis commands per keyless 404, less the background of the same interval.
  await sleep(6000);
  const probes = 50;
  const idleBefore = commandCalls(await admin.info("commandstats"));
  const idleStarted = performance.now();
  await sleep(2000);
  const idleCalls = commandCalls(await admin.info("commandstats")) - idleBefore - 1;
  const idleMs = performance.now() - idleStarted;
  const before = commandCalls(await admin.info("commandstats"));
  const started = performance.now();
  const misses: Sample[] = [];
  for (let n = 0; n < probes; n++) {
    misses.push(
      await timed(`${n % 2 === 0 ? webA : webB}/anchors/sha256:${randomBytes(32).toString("hex")}`),
    );
  }
  await sleep(2000);
  const calls = commandCalls(await admin.info("commandstats")) - before - 1;
  const background = (idleCalls * (performance.now() - started)) / idleMs;
  console.log(
    `(d) ${probes} keyless GET /anchors/<unknown>: ${summary(misses)}; ${calls} commands, background ${background.toFixed(0)}: ${((calls - background) / probes).toFixed(1)} per 404`,
  );
} catch (error) {
  if (!(error instanceof Done)) throw error;
} finally {
  redis.child.kill("SIGCONT");
  await database.end();
  admin.disconnect();
  await service.stop();
  redis.child.kill("SIGKILL");
  rmSync(redis.dir, { recursive: true, force: true });
}
