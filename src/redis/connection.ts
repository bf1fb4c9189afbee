/**
 * The Redis connection of distributed mode (architecture.md "Two modes, one code path"): one
 * ioredis client shared by the cap store, the digest cache and the nonce ledger, plus the key
 * prefix they all write under.
 *
 * Everything here serves the request path, where a dead or hung Redis must turn into a fast
 * error, never into a request that waits: commands are not queued while disconnected, a
 * command in flight when the connection drops fails at once instead of being resent later,
 * and every command has a timeout. The client keeps reconnecting in the background, so the
 * stores work again as soon as Redis is back.
 */
import { createHash } from "node:crypto";
import { activeTracing, type SpanAttributes } from "../tracing/tracing.js";
import type { RedisBreaker } from "./breaker.js";
import { createRedisClient, masters, mastersConnected, type RedisClient } from "./client.js";
import { normalisePrefix } from "./keys.js";
import { type RedisLog, RedisOutages } from "./outages.js";
import type { RedisTarget } from "./target.js";

export type { RedisClient } from "./client.js";
export { normalisePrefix } from "./keys.js";

/** How long a close waits for Redis to acknowledge before it drops the connection. */
export const CLOSE_GRACE_MS = 5_000;

/** Waits for `work` to settle, or `ms`, whichever comes first; never rejects. */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([
    work.then(
      () => {},
      () => {},
    ),
    elapsed,
  ]);
  clearTimeout(timer);
}

export type { RedisLog } from "./outages.js";

export interface RedisConnectionOptions {
  /**
   * `REDIS_URL` (redis:// or rediss://), or a Redis Cluster (`REDIS_CLUSTER_NODES`, target.ts).
   * Never logged: it may carry a password.
   */
  url: RedisTarget;
  /** `REDIS_PREFIX`; a `:` is appended unless it already ends with one. */
  prefix: string;
  log?: RedisLog;
  /**
   * The process's outage log, shared with its queue connections so that one outage is one
   * line; by default one of its own writing to `log`.
   */
  outages?: RedisOutages;
  /** Milliseconds to establish a connection (default 2000). */
  connectTimeoutMs?: number;
  /** Milliseconds a command may take before it fails (default 1000). */
  commandTimeoutMs?: number;
  /** Client name shown by `CLIENT LIST` (default `receiptd`). */
  name?: string;
}

export type RedisHealth = "up" | "down";

export interface RedisConnection {
  /** A `Redis`, or a `Cluster` (issue 36): every store's command routes by its key's slot. */
  readonly client: RedisClient;
  /** The process's circuit breaker, which `run` and `ping` go through. */
  readonly breaker: RedisBreaker;
  /** The key prefix, ending in `:`. */
  readonly prefix: string;
  /**
   * Runs `command` on the client through the process's circuit breaker: while Redis has not
   * answered recently it rejects at once with `RedisCircuitOpenError`, having sent nothing.
   * Every store's command goes through here.
   */
  run<T>(command: (client: RedisClient) => Promise<T>): Promise<T>;
  /** Resolves once the client is ready, or rejects after `timeoutMs` (default 5000). */
  waitReady(timeoutMs?: number): Promise<void>;
  /**
   * `up` when Redis answers PING within the command timeout (on a cluster: every master it
   * knows), else `down`; never throws. While the circuit is open it answers `down` at once,
   * without a PING.
   */
  ping(): Promise<RedisHealth>;
  /** Closes the client; later commands fail. Idempotent. */
  close(): Promise<void>;
}

const silent: RedisLog = { warn() {}, info() {} };

/** Reconnect delays: quick at first, then every 2 s for as long as Redis stays away. */
function reconnectDelay(attempt: number): number {
  return Math.min(100 * attempt, 2000);
}

/** What a Redis client span says: the system only, never a key (keys hold digests and ids). */
const REDIS_SPAN_ATTRIBUTES: SpanAttributes = { "db.system.name": "redis" };

export function openRedis(options: RedisConnectionOptions): RedisConnection {
  const outages = options.outages ?? new RedisOutages(options.log ?? silent);
  const client = createRedisClient(options.url, {
    connectionName: options.name ?? "receiptd",
    connectTimeout: options.connectTimeoutMs ?? 2000,
    commandTimeout: options.commandTimeoutMs ?? 1000,
    // 0: a command in flight when the connection drops is failed at once, not resent after
    // the reconnect (a resent cap increment would count twice; a late answer is useless).
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelay,
    // On a cluster, a command whose master just died is failed at once too, rather than
    // retried every 100 ms for the seconds a replica takes to be promoted: the breaker turns
    // the failure into fast 503s (and in-memory caps), and the slot map is re-read every
    // second (client.ts), so the promoted replica is used as soon as it is known.
    retryDelayOnFailoverMs: 0,
  });
  // An outage is logged when it starts and when it ends, not once per reconnect attempt.
  const unwatch = outages.watch(client, options.name ?? "receiptd");
  const breaker = outages.breaker;
  breaker.useProbe(() => pingAll(client));
  client.on("ready", () => breaker.connected());
  const untilReady = (timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        client.off("ready", onReady);
        reject(new Error(`redis not ready within ${timeoutMs} ms`));
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      client.once("ready", onReady);
    });
  let closed = false;
  return {
    client,
    prefix: normalisePrefix(options.prefix),
    breaker,
    // Every store's command passes here: the one place Redis client spans are made (issue 36).
    // Off, one comparison; a command refused by the open breaker is a span too, marked failed.
    run: (command) => {
      const tracing = activeTracing();
      if (tracing === null) return breaker.run(() => command(client));
      return tracing.inSpan("redis", "client", REDIS_SPAN_ATTRIBUTES, () =>
        breaker.run(() => command(client)),
      );
    },
    async waitReady(timeoutMs = 5000) {
      if (client.status !== "ready") await untilReady(timeoutMs);
      await mastersConnected(client);
    },
    async ping() {
      if (breaker.state === "open") return "down";
      try {
        return (await breaker.run(() => pingAll(client))) ? "up" : "down";
      } catch {
        return "down";
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      unwatch();
      breaker.close();
      // QUIT waits for Redis; a connection caught mid-reconnect may never get an answer, and a
      // shutdown must not wait for one. Whatever happened, stop reconnecting.
      await settleWithin(client.quit(), CLOSE_GRACE_MS);
      client.disconnect();
    },
  };
}

/**
 * True when the server, or every master of a cluster, answers PING. A cluster's `ping()` asks
 * one node at random, which says nothing of the master a failover has just taken away.
 */
async function pingAll(client: RedisClient): Promise<boolean> {
  const nodes = masters(client);
  if (nodes.length === 0) return false;
  const answers = await Promise.all(nodes.map((node) => node.ping()));
  return answers.every((answer) => answer === "PONG");
}

/**
 * A Lua script run by its SHA-1 (EVALSHA), sent in full only when Redis does not know it yet
 * (first use, or after a restart emptied the script cache).
 */
export class LuaScript {
  readonly #source: string;
  readonly #sha: string;

  constructor(source: string) {
    this.#source = source;
    this.#sha = createHash("sha1").update(source).digest("hex");
  }

  async run(client: RedisClient, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return await client.eval(this.#source, keys.length, ...keys, ...args);
    }
  }
}
