/**
 * The attack bench (issues 22 and 32): each attack runs against a FRESH `receiptd serve`
 * (embedded, or `--distributed`) on the Node.js line of `--node`, while an honest keyed client
 * sends `POST /verify` of the corpus's `02_happy_full.json`, one request at a time, from its own
 * address (127.0.2.1). Bounded: each attack lasts `--seconds` (default 20) plus its wind-down.
 *
 *   npm run bench:attacks -- [--seconds 20] [--node 20|24|PATH] [--only a,b] [--distributed]
 *                            [--checkout DIR]
 *   node --import tsx bench/attacks.ts …   (the same, from source)
 *
 * `--checkout` runs another checkout's built receiptd (its `dist/`), to compare side by side.
 *
 * The attacks (`--only` takes their names):
 * - `bombs` (issue 22): two 1 MiB did:key bombs whose clients hang up after `--hangup-ms`.
 * - `edge-points` (issue 32, finding 1): one key, 2 connections from 127.0.1.1, each sending
 *   1 MiB bundles of distinct did:key issuers whose signatures are a small-order R with S = 0
 *   (bench/support/edge-point-bundle.ts); two sets of keys alternate, 4,862 keys in all, more
 *   than a thread's key cache holds.
 * - `slow-bodies` (finding 2): one key, 300 `POST /verify` from 4 addresses (127.0.1.1–4), each
 *   declaring `Content-Length: 1048576` and sending one byte every `--trickle-ms`, reopened
 *   when the server closes it. `slow-bodies-many-keys`: five keys of 80 such bodies each.
 * - `batches-8`, `batches-64` (finding 3): one key sending 1 MiB batches of 50 real bundles
 *   (about 0.2 s of thread time each) on 8 or 64 connections from 127.0.1.1.
 * - `anonymous` (finding 6): 12 addresses of 12 networks (127.0.10–21.1) each send 250
 *   anonymous `GET /info` then 250 `GET /keys/evaluation/challenge`; then a fresh address
 *   (127.0.3.1) asks for an evaluation-key challenge.
 *
 * Per attack it prints the honest client's latencies and success rate during the attack (the
 * request in flight when the watch ends is waited for, the attack still running, and counts),
 * the attacker's requests by status, the units its keys were charged (`X-RateLimit-Remaining`
 * read by a cheap counted request, the honest bundle, before and after: charge = before − after
 * − the probe), and the service's CPU seconds from /proc. The rule "a request that used more
 * than 1 s of CPU is charged for it" is checked on one attack request sent alone before the
 * attack, on the quiet service: its CPU (the process's, from /proc) and its charge; it holds
 * when the request used at most 1 s, or was charged at least one unit per `UNIT_CPU_MS` of it.
 * Requests the deadline cut during the attack are counted too: the deadline charges them by
 * their run time. The goals of issue 32 are printed ✓ or ✗.
 */
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { parseArgs } from "node:util";
import { UNIT_CPU_MS } from "../src/service/cost.js";
import { batchOfSize, didKeyBombBundle } from "./fixtures.js";
import { type Http1Answer, Http1Connection } from "./http1-connection.js";
import { nodeBinary, type ServiceProcess, startServiceProcess } from "./service-process.js";
import { edgePointBundle } from "./support/edge-point-bundle.js";

const CLOCK_TICKS_PER_SECOND = 100;
const BOMB_BODY_BYTES = 1_040_000;
const MIB = 1024 * 1024;
const HONEST_ADDRESS = "127.0.2.1";
const FRESH_ADDRESS = "127.0.3.1";
/** The attackers' caps: finite, so the headers show what was charged; never reached here. */
const ATTACKER_CAP = 1_000_000;
/** A standard key's default cap: the issue's slow-body attacker needed no more. */
const DEFAULT_KEY_CAP = 1_000;
const ANSWER_TIMEOUT_MS = 60_000;

// The same file runs from bench/ (tsx) and from dist/bench/ (npm run bench:attacks).
const repoRoot = new URL(
  import.meta.url.includes("/dist/bench/") ? "../../" : "../",
  import.meta.url,
);
const HONEST_BODY = readFileSync(new URL("../shared/corpus/vectors/02_happy_full.json", repoRoot));

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "20" },
    node: { type: "string", default: process.versions.node.split(".")[0] ?? "20" },
    only: { type: "string" },
    "hangup-ms": { type: "string", default: "3000" },
    "trickle-ms": { type: "string", default: "3000" },
    distributed: { type: "boolean", default: false },
    checkout: { type: "string" },
  },
});
const watchMs = Number(values.seconds) * 1000;
const node = nodeBinary(values.node);
const trickleMs = Number(values["trickle-ms"]);

/** utime + stime of `pid`, in seconds (Linux /proc). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

function serviceCpu(service: ServiceProcess): number {
  const { web, worker } = service.pids;
  return cpuSeconds(web) + (worker === undefined ? 0 : cpuSeconds(worker));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

function tally(statuses: Record<string, number>, status: number | string): void {
  statuses[status] = (statuses[status] ?? 0) + 1;
}

/** A status, or the transport's failure in a few words. */
async function send(
  connection: Http1Connection,
  path: string,
  key: string | null,
  body?: Buffer | Uint8Array,
): Promise<{ status: number | string; answer: Http1Answer | null; ms: number }> {
  const started = performance.now();
  try {
    const answer = await connection.request({
      method: body === undefined ? "GET" : "POST",
      path,
      headers: {
        ...(key === null ? {} : { "x-svc-key": key }),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: Buffer.from(body) }),
    });
    return { status: answer.status, answer, ms: performance.now() - started };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    return {
      status: text.startsWith("no answer") ? "timeout" : "error",
      answer: null,
      ms: performance.now() - started,
    };
  }
}

/** The honest client: one `POST /verify` at a time from its own address until stopped. */
class HonestClient {
  readonly latencies: number[] = [];
  readonly statuses: Record<string, number> = {};
  #stopped = false;
  #loop: Promise<void> | null = null;
  readonly #connection: Http1Connection;

  constructor(
    origin: string,
    readonly key: string,
  ) {
    this.#connection = new Http1Connection(origin, ANSWER_TIMEOUT_MS, {
      localAddress: HONEST_ADDRESS,
    });
  }

  /** `count` requests one after another: their latencies, sorted. */
  async sample(count: number): Promise<number[]> {
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      latencies.push((await send(this.#connection, "/verify", this.key, HONEST_BODY)).ms);
    }
    return latencies.sort((a, b) => a - b);
  }

  start(): void {
    this.#loop = (async () => {
      while (!this.#stopped) {
        const sent = await send(this.#connection, "/verify", this.key, HONEST_BODY);
        this.latencies.push(sent.ms);
        tally(this.statuses, sent.status);
      }
    })();
  }

  /** Sends no more; `done` resolves once the request in flight is answered (or times out). */
  stop(): void {
    this.#stopped = true;
  }

  async done(): Promise<void> {
    await this.#loop;
    this.#connection.close();
  }
}

/**
 * One charge probe: the bucket's `X-RateLimit-Remaining` after a counted honest bundle, or null
 * when five tries in five seconds got none (the report then says the charge is unknown).
 */
async function remainingOf(
  origin: string,
  key: string,
  localAddress: string,
): Promise<number | null> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const connection = new Http1Connection(origin, ANSWER_TIMEOUT_MS, { localAddress });
    const sent = await send(connection, "/verify", key, HONEST_BODY);
    connection.close();
    const remaining = sent.answer?.headers.get("x-ratelimit-remaining");
    if (sent.status === 200 && remaining !== undefined) return Number(remaining);
    console.error(`  (charge probe: ${sent.status}; trying again)`);
    await sleep(1000);
  }
  return null;
}

/** What an attack did, for the report. */
interface AttackOutcome {
  /** Requests by status (or the attack's own words: "reopened", …). */
  statuses: Record<string, number>;
  /** Extra lines for the report, and the goal it checks if it has its own. */
  notes?: string[];
  goal?: { text: string; met: boolean };
}

interface Attack {
  name: string;
  finding: string;
  /** Keys the attack uses (their caps), besides the honest one. */
  keys: { name: string; cap: number }[];
  /** One attack request, sent alone before the attack, to see its CPU and charge. */
  solo?: (service: ServiceProcess) => Promise<number | string>;
  /** Runs until `stop` resolves, then winds down (waits for or closes what it holds). */
  run(service: ServiceProcess, stop: Promise<void>): Promise<AttackOutcome>;
  /** The goal on the honest client's figures. */
  honestGoal?: { text: string; check(figures: HonestFigures): boolean };
}

interface HonestFigures {
  answers: number;
  successRate: number;
  p50: number;
  p99: number;
  max: number;
  statuses: Record<string, number>;
}

/** `connections` closed loops of `body` from `localAddress` until `stop`. */
async function closedLoops(
  origin: string,
  key: string,
  bodies: readonly Uint8Array[],
  connections: number,
  localAddress: (i: number) => string,
  stop: Promise<void>,
): Promise<AttackOutcome> {
  const statuses: Record<string, number> = {};
  let stopped = false;
  void stop.then(() => {
    stopped = true;
  });
  let slowest = 0;
  await Promise.all(
    Array.from({ length: connections }, async (_, i) => {
      const connection = new Http1Connection(origin, ANSWER_TIMEOUT_MS, {
        localAddress: localAddress(i),
      });
      for (let n = i; !stopped; n++) {
        const sent = await send(connection, "/verify", key, bodies[n % bodies.length]!);
        const code = sent.answer?.body.match(/"error":"([a-z_]+)"/)?.[1];
        tally(statuses, code === undefined ? sent.status : `${sent.status} ${code}`);
        slowest = Math.max(slowest, sent.ms);
      }
      connection.close();
    }),
  );
  return { statuses, notes: [`slowest attack request: ${(slowest / 1000).toFixed(2)} s`] };
}

/** A sequence of `sockets` slow bodies from `addresses`, each reopened once closed. */
async function slowBodies(
  origin: string,
  keys: readonly string[],
  perKey: number,
  addresses: readonly string[],
  stop: Promise<void>,
): Promise<AttackOutcome> {
  const url = new URL(origin);
  const statuses: Record<string, number> = {};
  const open = new Set<Socket>();
  let stopped = false;
  let opened = 0;
  let maxHeld = 0;
  const holders: Promise<void>[] = [];
  /** One slow body; resolves when the server closed it (its status tallied). */
  const hold = (key: string, localAddress: string) =>
    new Promise<void>((resolve) => {
      const socket = connect({ host: url.hostname, port: Number(url.port), localAddress });
      opened++;
      open.add(socket);
      maxHeld = Math.max(maxHeld, open.size);
      let answered = "";
      let trickle: NodeJS.Timeout | undefined;
      socket.on("connect", () => {
        socket.write(
          `POST /verify HTTP/1.1\r\nhost: ${url.host}\r\nx-svc-key: ${key}\r\n` +
            `content-type: application/json\r\ncontent-length: ${MIB}\r\n\r\n[`,
        );
        trickle = setInterval(() => socket.write(" "), trickleMs);
      });
      socket.on("data", (chunk: Buffer) => {
        if (answered.length < 2_000) answered += chunk.toString("latin1", 0, 2_000);
      });
      socket.on("error", () => {});
      socket.on("close", () => {
        clearInterval(trickle);
        open.delete(socket);
        if (!stopped) {
          const status = /^HTTP\/1\.1 (\d{3})/.exec(answered)?.[1];
          const code = /"error":"([a-z_]+)"/.exec(answered)?.[1];
          tally(statuses, status === undefined ? "closed, no answer" : `${status} ${code ?? ""}`);
        }
        resolve();
      });
    });
  const keep = async (key: string, localAddress: string) => {
    while (!stopped) {
      await hold(key, localAddress);
      // Reopened at once, but not in a tight loop: the attack is the held memory.
      if (!stopped) await sleep(500);
    }
  };
  let index = 0;
  for (const key of keys) {
    for (let i = 0; i < perKey; i++) {
      holders.push(keep(key, addresses[index++ % addresses.length]!));
    }
  }
  await stop;
  stopped = true;
  for (const socket of open) socket.destroy();
  await Promise.all(holders);
  statuses.opened = opened;
  return {
    statuses,
    notes: [`${keys.length} key(s) × ${perKey} bodies; at most ${maxHeld} held at once`],
  };
}

async function anonymousFlood(origin: string, stop: Promise<void>): Promise<AttackOutcome> {
  const statuses: Record<string, number> = {};
  const addresses = Array.from({ length: 12 }, (_, i) => `127.0.${10 + i}.1`);
  const started = performance.now();
  await Promise.all(
    addresses.map(async (localAddress) => {
      const connection = new Http1Connection(origin, ANSWER_TIMEOUT_MS, { localAddress });
      for (const path of ["/info", "/keys/evaluation/challenge"]) {
        for (let i = 0; i < 250; i++)
          tally(statuses, `${path} ${(await send(connection, path, null)).status}`);
      }
      connection.close();
    }),
  );
  const floodSeconds = (performance.now() - started) / 1000;
  const fresh = new Http1Connection(origin, ANSWER_TIMEOUT_MS, { localAddress: FRESH_ADDRESS });
  const challenge = await send(fresh, "/keys/evaluation/challenge", null);
  const info = await send(fresh, "/info", null);
  fresh.close();
  await stop;
  const remaining = challenge.answer?.headers.get("x-ratelimit-remaining") ?? "none";
  return {
    statuses,
    notes: [
      `flood: 12 addresses of 12 networks × (250 GET /info + 250 GET /keys/evaluation/challenge) in ${floodSeconds.toFixed(1)} s`,
      `fresh address ${FRESH_ADDRESS}: challenge ${challenge.status} (X-RateLimit-Remaining ${remaining}), /info ${info.status}`,
    ],
    goal: { text: "fresh address gets its challenge", met: challenge.status === 200 },
  };
}

const p99Goal = {
  text: "honest p99 ≤ 250 ms",
  check: (figures: HonestFigures) => figures.p99 <= 250,
};
const successGoal = {
  text: "honest success ≥ 95%",
  check: (figures: HonestFigures) => figures.successRate >= 0.95,
};

function sendAlone(service: ServiceProcess, key: string, body: Uint8Array) {
  return async () => {
    const connection = new Http1Connection(service.origin, ANSWER_TIMEOUT_MS, {
      localAddress: "127.0.1.1",
    });
    const sent = await send(connection, "/verify", key, body);
    connection.close();
    return sent.status;
  };
}

/** A body built the first time an attack that was chosen asks for it. */
function lazy<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => {
    made ??= make();
    return made;
  };
}

function attacks(): Attack[] {
  const bomb = lazy(() => didKeyBombBundle(BOMB_BODY_BYTES));
  const edgeBodies = lazy(() => [edgePointBundle(MIB, "a"), edgePointBundle(MIB, "b")]);
  const edgeSolo = lazy(() => edgePointBundle(MIB, "solo"));
  const batch = lazy(() => batchOfSize(MIB - 4096, 50));
  const hangupMs = Number(values["hangup-ms"]);
  const batches = (connections: number): Attack => ({
    name: `batches-${connections}`,
    finding: "3",
    keys: [{ name: "attacker", cap: ATTACKER_CAP }],
    solo: (service) => sendAlone(service, service.keys.attacker!, batch())(),
    run: (service, stop) =>
      closedLoops(
        service.origin,
        service.keys.attacker!,
        [batch()],
        connections,
        () => "127.0.1.1",
        stop,
      ),
    honestGoal: p99Goal,
  });
  const slowAddresses = ["127.0.1.1", "127.0.1.2", "127.0.1.3", "127.0.1.4"];
  return [
    {
      name: "bombs",
      finding: "issue 22",
      keys: [{ name: "attacker", cap: ATTACKER_CAP }],
      async run(service, stop) {
        const statuses: Record<string, number> = {};
        await Promise.all(
          [0, 1].map(async () => {
            const connection = new Http1Connection(service.origin, ANSWER_TIMEOUT_MS, {
              localAddress: "127.0.1.1",
            });
            const hangup = setTimeout(() => connection.close(), hangupMs);
            const sent = await send(connection, "/verify", service.keys.attacker!, bomb());
            clearTimeout(hangup);
            tally(statuses, sent.status === "error" ? "hung up" : sent.status);
          }),
        );
        await stop;
        return {
          statuses,
          notes: [`2 × ${bomb().length} bytes, clients hang up after ${hangupMs} ms`],
        };
      },
    },
    {
      name: "edge-points",
      finding: "1",
      keys: [{ name: "attacker", cap: ATTACKER_CAP }],
      solo: (service) => sendAlone(service, service.keys.attacker!, edgeSolo())(),
      run: (service, stop) =>
        closedLoops(
          service.origin,
          service.keys.attacker!,
          edgeBodies(),
          2,
          () => "127.0.1.1",
          stop,
        ),
      honestGoal: p99Goal,
    },
    {
      name: "slow-bodies",
      finding: "2",
      keys: [{ name: "attacker", cap: DEFAULT_KEY_CAP }],
      run: (service, stop) =>
        slowBodies(service.origin, [service.keys.attacker!], 300, slowAddresses, stop),
      honestGoal: successGoal,
    },
    {
      name: "slow-bodies-many-keys",
      finding: "2",
      keys: Array.from({ length: 5 }, (_, i) => ({ name: `attacker${i}`, cap: DEFAULT_KEY_CAP })),
      run: (service, stop) =>
        slowBodies(
          service.origin,
          Array.from({ length: 5 }, (_, i) => service.keys[`attacker${i}`]!),
          80,
          slowAddresses,
          stop,
        ),
      honestGoal: successGoal,
    },
    batches(8),
    batches(64),
    {
      name: "anonymous",
      finding: "6",
      keys: [],
      run: (service, stop) => anonymousFlood(service.origin, stop),
    },
  ];
}

interface Report {
  attack: Attack;
  quiet: { p50: number; p99: number };
  honest: HonestFigures;
  outcome: AttackOutcome;
  watchSeconds: number;
  cpuSeconds: number;
  /** Units charged to the attack's keys during the attack (all keys together). */
  charge: number | null;
  solo: { status: number | string; cpuSeconds: number; units: number | null } | null;
}

/**
 * The probe once what the attack held has been given back: probes a second apart until one is
 * exactly the previous one less its own unit (at most ten). Its figures count as one probe: the
 * earlier probes' units are added back.
 */
async function settledProbe(probe: () => Promise<(number | null)[]>): Promise<(number | null)[]> {
  await sleep(1000);
  let previous = await probe();
  for (let extra = 1; extra <= 10; extra++) {
    await sleep(1000);
    const now = await probe();
    const settled = now.every((value, i) => value !== null && value === previous[i]! - 1);
    if (settled) return now.map((value) => value! + extra);
    previous = now;
  }
  return previous.map(() => null);
}

/** Units charged between two probes of the same keys, less the second probe's; null if unknown. */
function chargeBetween(before: (number | null)[], after: (number | null)[]): number | null {
  let units = 0;
  for (const [i, was] of before.entries()) {
    const now = after[i];
    if (was === null || now === null || now === undefined) return null;
    units += was - now - 1;
  }
  return units;
}

async function runAttack(attack: Attack): Promise<Report> {
  const service = await startServiceProcess({
    distributed: values.distributed,
    node,
    ...(values.checkout === undefined ? {} : { checkout: values.checkout }),
    keys: [{ name: "honest", cap: ATTACKER_CAP }, ...attack.keys],
  });
  try {
    const honest = new HonestClient(service.origin, service.keys.honest!);
    // Warm up: threads started, the honest path compiled, before anything is timed.
    await honest.sample(20);
    const quiet = await honest.sample(50);
    const keys = attack.keys.map(({ name }) => service.keys[name]!);
    const probe = async () => {
      const remaining = [];
      for (const key of keys) remaining.push(await remainingOf(service.origin, key, "127.0.1.9"));
      return remaining;
    };
    let before = await probe();
    let solo: Report["solo"] = null;
    if (attack.solo !== undefined) {
      await sleep(300);
      const cpuBefore = serviceCpu(service);
      const status = await attack.solo(service);
      await sleep(300);
      const cpu = serviceCpu(service) - cpuBefore;
      const after = await probe();
      solo = { status, cpuSeconds: cpu, units: chargeBetween(before, after) };
      before = after;
    }
    const cpuBefore = serviceCpu(service);
    const started = performance.now();
    let endWatch = () => {};
    const stop = new Promise<void>((resolve) => {
      endWatch = resolve;
    });
    honest.start();
    const running = attack.run(service, stop);
    await sleep(watchMs);
    // The honest request in flight is sent during the attack: it is waited for, and counts.
    honest.stop();
    await honest.done();
    const watchSeconds = (performance.now() - started) / 1000;
    const cpuSeconds = serviceCpu(service) - cpuBefore;
    endWatch();
    const outcome = await running;
    const after = await settledProbe(probe);
    const charge = keys.length === 0 ? null : chargeBetween(before, after);
    const sorted = [...honest.latencies].sort((a, b) => a - b);
    const answers = honest.latencies.length;
    const figures: HonestFigures = {
      answers,
      successRate: answers === 0 ? 0 : (honest.statuses["200"] ?? 0) / answers,
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      max: sorted.at(-1) ?? Number.NaN,
      statuses: honest.statuses,
    };
    return {
      attack,
      quiet: { p50: quantile(quiet, 0.5), p99: quantile(quiet, 0.99) },
      honest: figures,
      outcome,
      watchSeconds,
      cpuSeconds,
      charge,
      solo,
    };
  } finally {
    await service.stop();
  }
}

/** "a request that used more than 1 s of CPU is charged for it", on the solo request. */
function heavyRule(report: Report): { text: string; met: boolean } | null {
  const { solo } = report;
  if (solo === null) return null;
  const cpuMs = solo.cpuSeconds * 1000;
  const due = Math.floor(cpuMs / UNIT_CPU_MS);
  const met = cpuMs <= 1000 || (solo.units !== null && solo.units >= due);
  const cut = Object.entries(report.outcome.statuses)
    .filter(([status]) => status.includes("work_limit_exceeded"))
    .reduce((sum, [, count]) => sum + count, 0);
  return {
    text:
      `one request alone: ${solo.status}, ${solo.cpuSeconds.toFixed(2)} s CPU, charged ${solo.units ?? "?"} unit(s)` +
      (cpuMs > 1000 ? ` (due ≥ ${due} at ${UNIT_CPU_MS} ms a unit)` : " (≤ 1 s)") +
      `; cut by the deadline during the attack: ${cut}`,
    met,
  };
}

const mark = (met: boolean) => (met ? "✓" : "✗");
const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(1)} ms` : "—");

function print(report: Report): void {
  const { attack, honest, outcome } = report;
  console.log(
    `\n== ${attack.name} (finding ${attack.finding}), Node ${nodeVersion}, ${mode}, build ${values.checkout ?? "this checkout"}`,
  );
  for (const note of outcome.notes ?? []) console.log(`  ${note}`);
  console.log(`  honest before: p50 ${ms(report.quiet.p50)}, p99 ${ms(report.quiet.p99)}`);
  console.log(
    `  honest during ${report.watchSeconds.toFixed(1)} s: ${honest.answers} requests, ` +
      `${(honest.successRate * 100).toFixed(1)}% 200, p50 ${ms(honest.p50)}, p99 ${ms(honest.p99)}, ` +
      `max ${ms(honest.max)}; ${JSON.stringify(honest.statuses)}`,
  );
  console.log(`  attacker: ${JSON.stringify(outcome.statuses)}`);
  console.log(
    `  attacker charged: ${report.charge === null ? "— (no key)" : `${report.charge} unit(s)`}; ` +
      `service CPU ${report.cpuSeconds.toFixed(1)} s (${(report.cpuSeconds / report.watchSeconds).toFixed(2)} cores)`,
  );
  const rule = heavyRule(report);
  if (rule !== null) console.log(`  ${mark(rule.met)} > 1 s of CPU charged: ${rule.text}`);
  if (attack.honestGoal !== undefined) {
    console.log(`  ${mark(attack.honestGoal.check(honest))} ${attack.honestGoal.text}`);
  }
  if (outcome.goal !== undefined) console.log(`  ${mark(outcome.goal.met)} ${outcome.goal.text}`);
}

function table(reports: readonly Report[]): string {
  const rows = reports.map((report) => {
    const { attack, honest, outcome } = report;
    const goals = [
      ...(attack.honestGoal === undefined
        ? []
        : [`${mark(attack.honestGoal.check(honest))} ${attack.honestGoal.text}`]),
      ...(outcome.goal === undefined ? [] : [`${mark(outcome.goal.met)} ${outcome.goal.text}`]),
    ];
    const rule = heavyRule(report);
    const statuses = Object.entries(outcome.statuses)
      .map(([status, count]) => `${status}: ${count}`)
      .join(", ");
    return (
      `| ${attack.name} | ${attack.finding} | ${honest.answers} | ${(honest.successRate * 100).toFixed(1)}% | ` +
      `${honest.p50.toFixed(0)} | ${honest.p99.toFixed(0)} | ${honest.max.toFixed(0)} | ${statuses} | ` +
      `${report.charge ?? "—"} | ${report.cpuSeconds.toFixed(1)} | ` +
      `${rule === null ? "—" : `${mark(rule.met)} ${report.solo!.cpuSeconds.toFixed(2)} s → ${report.solo!.units ?? "?"} u`} | ` +
      `${goals.join("; ") || "—"} |`
    );
  });
  return [
    `Node ${nodeVersion}, ${mode}, ${values.seconds} s per attack, build ${values.checkout ?? "this checkout"}`,
    "",
    "| attack | finding | honest requests | honest 200 | p50 ms | p99 ms | max ms | attacker's requests | charged units | service CPU s | one alone: CPU → units | goals |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

const mode = values.distributed ? "distributed" : "embedded";
const nodeVersion = (await import("node:child_process"))
  .execFileSync(node, ["--version"], { encoding: "utf8" })
  .trim();
const chosen = values.only?.split(",").map((name) => name.trim());
const selected = attacks().filter((attack) => chosen === undefined || chosen.includes(attack.name));
if (selected.length === 0) throw new Error(`no attack named ${values.only}`);
const reports: Report[] = [];
for (const attack of selected) {
  const report = await runAttack(attack);
  print(report);
  reports.push(report);
}
console.log(`\n${table(reports)}`);
