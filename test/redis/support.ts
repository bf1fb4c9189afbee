/**
 * Redis for the store tests. The shared Redis (REDIS_URL, default 127.0.0.1:6379) is used by
 * everyone, CI included: every test works under its own random prefix and deletes its keys
 * afterwards (never FLUSHDB). Outage tests get a private redis-server they may kill or pause.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createConnection } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "../../bench/support/free-port.js";
import { masters, type RedisClient } from "../../src/redis/client.js";
import {
  openRedis,
  type RedisConnection,
  type RedisConnectionOptions,
} from "../../src/redis/connection.js";

export const SHARED_REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";

export function randomPrefix(): string {
  return `receiptd-test-${randomBytes(8).toString("hex")}:`;
}

/** A ready connection under a fresh random prefix (or `prefix`). */
export async function openTestRedis(
  prefix: string = randomPrefix(),
  url: string = SHARED_REDIS_URL,
  options: Partial<RedisConnectionOptions> = {},
): Promise<RedisConnection> {
  const connection = openRedis({ url, prefix, name: "receiptd-test", ...options });
  await connection.waitReady();
  return connection;
}

/**
 * Every key under `prefix` (the prefix is hex and punctuation: no glob characters); on a
 * cluster, every master's.
 */
export async function keysUnder(client: RedisClient, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for (const server of masters(client)) {
    let cursor = "0";
    do {
      const [next, batch] = await server.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== "0");
  }
  return keys;
}

/** Deletes `keys` one command per key (a cluster refuses a multi-key UNLINK across slots). */
export async function unlinkKeys(client: RedisClient, keys: string[]): Promise<void> {
  await Promise.all(keys.map((key) => client.unlink(key)));
}

/** Deletes the connection's keys, then closes it. */
export async function disposeTestRedis(connection: RedisConnection): Promise<void> {
  await unlinkKeys(connection.client, await keysUnder(connection.client, connection.prefix));
  await connection.close();
}

async function accepts(port: number): Promise<boolean> {
  const socket = createConnection({ port, host: "127.0.0.1" });
  try {
    await once(socket, "connect");
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}

export interface PrivateRedis {
  url: string;
  port: number;
  /** Kills the server (SIGKILL: an abrupt outage) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT after `pause`. */
  resume(): void;
}

/**
 * A throwaway redis-server on a free port, without persistence; with `{ running: false }` the
 * port is chosen but nothing listens on it until `start()` (Redis down from the beginning).
 */
export async function startPrivateRedis(
  options: { running?: boolean } = {},
): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(
      "/usr/bin/redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    for (let attempt = 0; attempt < 200; attempt += 1) {
      if (await accepts(port)) return;
      await sleep(25);
    }
    throw new Error(`private redis-server did not start on port ${port}`);
  };
  const stop = async () => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    const exited = once(running, "exit");
    running.kill("SIGKILL");
    await exited;
  };
  const signal = (name: NodeJS.Signals) => () => {
    (child as ChildProcess | null)?.kill(name);
  };
  if (options.running !== false) await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    start,
    pause: signal("SIGSTOP"),
    resume: signal("SIGCONT"),
  };
}
