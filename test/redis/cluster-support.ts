/**
 * A real Redis Cluster for the tests (issue 36): 3 masters and 3 replicas, each a
 * `redis-server --cluster-enabled yes` on a free private port, without persistence, in a
 * temporary directory; joined with `redis-cli --cluster create … --cluster-replicas 1`, ready
 * once every node says `cluster_state:ok` and agrees on who owns each slot. `stop()` kills
 * them all and removes the directory.
 *
 * `RECEIPTD_TEST_CLUSTER_NODES` (comma-separated `host:port`) names a cluster that is already
 * running instead (a CI service, or one shared by a lane's files): the tests then work under
 * their own key prefix there and start or kill nothing. Failover tests need a cluster of their
 * own (`startTestCluster({ own: true })`), since they kill a master.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import {
  openRedis,
  type RedisConnection,
  type RedisConnectionOptions,
} from "../../src/redis/connection.js";
import {
  parseClusterNodes,
  type RedisClusterTarget,
  type RedisNode,
} from "../../src/redis/target.js";
import { openTestRedis, randomPrefix } from "./support.js";

const run = promisify(execFile);

export interface TestCluster {
  /** The six nodes (a shared cluster: its seeds). */
  nodes: RedisNode[];
  /** `REDIS_CLUSTER_NODES` for a child process. */
  nodesEnv: string;
  target: RedisClusterTarget;
  /** `host:port` of the masters, now. */
  masters(): Promise<RedisNode[]>;
  /** `host:port` of the master that owns `key`'s slot, now. */
  masterOf(key: string): Promise<RedisNode>;
  /** SIGKILL of the node on `port` (its replica is promoted after the node timeout). */
  kill(port: number): Promise<void>;
  /** SIGSTOP / SIGCONT of the node on `port`: a master that keeps its connections, silent. */
  pause(port: number): void;
  resume(port: number): void;
  /** Resolves once every live node says `cluster_state:ok` and all agree on the slots. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** The node timeout of the clusters started here: a master is failed over ~2-3 s after death. */
export const CLUSTER_NODE_TIMEOUT_MS = 2000;

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], {
    timeout: 10_000,
  });
  return stdout;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, "127.0.0.1");
  try {
    await once(server, "listening");
  } catch {
    return false;
  }
  server.close();
  await once(server, "close");
  return true;
}

/**
 * Six ports P whose cluster bus ports (P + 10000) are free too; below the ephemeral range, so
 * that a client socket does not take one between the check and the server's start.
 */
async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  let candidate = 20_000 + Math.floor(Math.random() * 9_000);
  while (ports.length < count) {
    candidate += 1;
    if (candidate >= 29_999) candidate = 20_001;
    if ((await portFree(candidate)) && (await portFree(candidate + 10_000))) ports.push(candidate);
  }
  return ports;
}

/** `CLUSTER SHARDS`-like view from `CLUSTER NODES`: master ids, addresses and slot ranges. */
function parseClusterNodesOutput(text: string) {
  return text
    .trim()
    .split("\n")
    .map((line) => {
      const [id, address, flags, master, , , , link, ...slots] = line.split(" ");
      const hostPort = (address ?? "").split("@")[0] ?? "";
      const [host, port] = hostPort.split(":");
      return {
        id: id ?? "",
        node: { host: host ?? "", port: Number(port) },
        flags: (flags ?? "").split(","),
        master: master ?? "-",
        connected: link === "connected",
        slots,
      };
    });
}

export async function startTestCluster(options: { own?: boolean } = {}): Promise<TestCluster> {
  const shared = process.env.RECEIPTD_TEST_CLUSTER_NODES;
  if (shared && options.own !== true) return clusterOf(parseClusterNodes(shared), async () => {});
  const dir = await mkdtemp(join(tmpdir(), "receiptd-cluster-"));
  const ports = await freeClusterPorts(6);
  const children = new Map<number, ChildProcess>();
  const stop = async () => {
    await Promise.all(
      [...children.values()].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, "exit");
        child.kill("SIGKILL");
        await exited;
      }),
    );
    children.clear();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const child = spawn(
        "redis-server",
        [
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, `nodes-${port}.conf`),
          "--cluster-node-timeout",
          String(CLUSTER_NODE_TIMEOUT_MS),
          "--save",
          "",
          "--appendonly",
          "no",
          "--dir",
          dir,
        ],
        { stdio: "ignore" },
      );
      children.set(port, child);
    }
    for (const port of ports) {
      let up = false;
      for (let attempt = 0; attempt < 200 && !up; attempt += 1) {
        up = await listening(port);
        if (!up) await sleep(25);
      }
      if (!up) throw new Error(`redis-server did not start on port ${port}`);
    }
    await run(
      "redis-cli",
      [
        "--cluster",
        "create",
        ...ports.map((port) => `127.0.0.1:${port}`),
        "--cluster-replicas",
        "1",
        "--cluster-yes",
      ],
      { timeout: 60_000 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const cluster = clusterOf(
    ports.map((port) => ({ host: "127.0.0.1", port })),
    stop,
    async (port) => {
      const child = children.get(port);
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
    },
    (port, signal) => {
      children.get(port)?.kill(signal);
    },
  );
  try {
    await cluster.waitHealthy();
  } catch (error) {
    await stop();
    throw error;
  }
  return cluster;
}

function clusterOf(
  nodes: RedisNode[],
  stop: () => Promise<void>,
  kill: (port: number) => Promise<void> = async () => {
    throw new Error("a shared cluster's nodes are not ours to kill");
  },
  signal: (port: number, signal: NodeJS.Signals) => void = () => {
    throw new Error("a shared cluster's nodes are not ours to pause");
  },
): TestCluster {
  const dead = new Set<number>();
  const alive = () => nodes.filter((node) => !dead.has(node.port));
  const view = async () => {
    for (const node of alive()) {
      try {
        return parseClusterNodesOutput(await cli(node.port, "cluster", "nodes"));
      } catch {}
    }
    throw new Error("no cluster node answers");
  };
  const masters = async () =>
    (await view())
      .filter((entry) => entry.flags.includes("master") && !entry.flags.includes("fail"))
      .filter((entry) => entry.slots.length > 0)
      .map((entry) => entry.node);
  return {
    nodes,
    nodesEnv: nodes.map((node) => `${node.host}:${node.port}`).join(","),
    target: { clusterNodes: nodes, url: null },
    masters,
    async masterOf(key) {
      const [first] = alive();
      if (first === undefined) throw new Error("no cluster node is alive");
      const slot = Number((await cli(first.port, "cluster", "keyslot", key)).trim());
      for (const entry of await view()) {
        if (!entry.flags.includes("master") || entry.flags.includes("fail")) continue;
        for (const range of entry.slots) {
          const [low, high] = range.split("-").map(Number);
          if (low === undefined) continue;
          if (slot >= low && slot <= (high ?? low)) return entry.node;
        }
      }
      throw new Error(`no master owns slot ${slot}`);
    },
    async kill(port) {
      dead.add(port);
      await kill(port);
    },
    pause: (port) => signal(port, "SIGSTOP"),
    resume: (port) => signal(port, "SIGCONT"),
    async waitHealthy(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          const states = await Promise.all(
            alive().map((node) => cli(node.port, "cluster", "info")),
          );
          const ok = states.every((state) => /cluster_state:ok/.test(state));
          const views = await Promise.all(
            alive().map(async (node) =>
              parseClusterNodesOutput(await cli(node.port, "cluster", "nodes"))
                .filter((entry) => entry.flags.includes("master") && entry.slots.length > 0)
                .filter((entry) => !entry.flags.includes("fail"))
                .map((entry) =>
                  // A killed master that still owns slots: its failover has not happened yet.
                  dead.has(entry.node.port)
                    ? "dead"
                    : `${entry.node.port}:${entry.slots.join(",")}`,
                )
                .sort()
                .join(" "),
            ),
          );
          if (ok && new Set(views).size === 1 && !views.some((view) => view.includes("dead"))) {
            return;
          }
        } catch {}
        if (Date.now() > deadline) throw new Error("the test cluster did not become healthy");
        await sleep(100);
      }
    },
    stop,
  };
}

/** A ready store connection to `cluster` under a fresh random prefix. */
export async function openClusterRedis(
  cluster: TestCluster,
  prefix: string = randomPrefix(),
  options: Partial<RedisConnectionOptions> = {},
): Promise<RedisConnection> {
  const connection = openRedis({
    url: cluster.target,
    prefix,
    name: "receiptd-test",
    ...options,
  });
  await connection.waitReady(10_000);
  return connection;
}

/** Where a store contract runs: the shared single Redis, or this file's Redis Cluster. */
export interface RedisBackend {
  name: "single Redis" | "Redis Cluster";
  /** A ready connection under a fresh random prefix (or `prefix`). */
  open(prefix?: string, options?: Partial<RedisConnectionOptions>): Promise<RedisConnection>;
}

/**
 * The two backends a Redis-backed store's contract runs on (issue 36): call at a test file's
 * top level. The cluster is started on first use (once per file, or `RECEIPTD_TEST_CLUSTER_NODES`)
 * and stopped after the file's last test.
 */
export function redisBackends(): RedisBackend[] {
  let cluster: Promise<TestCluster> | undefined;
  after(async () => {
    if (cluster !== undefined) await (await cluster).stop();
  });
  return [
    { name: "single Redis", open: (prefix, options) => openTestRedis(prefix, undefined, options) },
    {
      name: "Redis Cluster",
      async open(prefix, options) {
        cluster ??= startTestCluster();
        return openClusterRedis(await cluster, prefix, options);
      },
    },
  ];
}
