/**
 * Makes the ioredis client of a `RedisTarget`: a `Redis` for one server, a `Cluster` for a Redis
 * Cluster (issue 36). Every connection receiptd opens (the stores', the queue producers', the
 * workers', the metrics reader's, `admin purge`'s) is made here, so one place decides how a
 * cluster client behaves.
 *
 * On a cluster the per-connection options (timeouts, retries per command, the resend of
 * commands in flight) go to each node's connection (`redisOptions`); whether commands wait in
 * an offline queue is the cluster client's own option, as is the reconnect delay (its
 * `clusterRetryStrategy`). Reads go to masters only (`scaleReads: "master"`): a replica lags
 * (asynchronous replication), and a cap or a nonce read from one could be stale.
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { isClusterTarget, type RedisTarget } from "./target.js";

export type RedisClient = Redis | Cluster;

export interface RedisClientOptions extends RedisOptions {
  /**
   * How long a command that found its node's connection closed waits before it is tried again
   * on a fresh slot map (ioredis `retryDelayOnFailover`; cluster only). 0 fails it at once: the
   * request path's choice, where a fast 503 beats a wait for a failover that takes seconds.
   */
  retryDelayOnFailoverMs?: number;
}

/** The user, password and TLS of `url`, for every node of a cluster. */
function credentialsOf(url: string): RedisOptions {
  const parsed = new URL(url);
  const options: RedisOptions = {};
  if (parsed.username !== "") options.username = decodeURIComponent(parsed.username);
  if (parsed.password !== "") options.password = decodeURIComponent(parsed.password);
  if (parsed.protocol === "rediss:") options.tls = {};
  return options;
}

export function createRedisClient(target: RedisTarget, options: RedisClientOptions): RedisClient {
  const { retryDelayOnFailoverMs, ...redisOptions } = options;
  if (!isClusterTarget(target)) return new Redis(target, redisOptions);
  const { enableOfflineQueue, lazyConnect, retryStrategy, connectionName, ...nodeOptions } =
    redisOptions;
  const seeds = [...target.clusterNodes];
  if (target.url !== null) {
    const url = new URL(target.url);
    if (url.hostname !== "") seeds.push({ host: url.hostname, port: Number(url.port || 6379) });
  }
  const clusterOptions: ClusterOptions = {
    redisOptions: {
      ...(target.url === null ? {} : credentialsOf(target.url)),
      ...nodeOptions,
      ...(connectionName === undefined ? {} : { connectionName }),
    },
    scaleReads: "master",
    // MOVED / ASK during a resharding or after a failover: a handful is plenty.
    maxRedirections: 16,
    retryDelayOnFailover: retryDelayOnFailoverMs ?? 100,
    retryDelayOnClusterDown: retryDelayOnFailoverMs ?? 100,
    retryDelayOnTryAgain: 100,
    // The slot map is also re-read every second, so that a promoted replica is found without
    // waiting for a command to be refused first.
    slotsRefreshInterval: 1000,
    slotsRefreshTimeout: 1000,
  };
  if (enableOfflineQueue !== undefined) clusterOptions.enableOfflineQueue = enableOfflineQueue;
  if (lazyConnect !== undefined) clusterOptions.lazyConnect = lazyConnect;
  if (retryStrategy !== undefined) {
    const delay = retryStrategy;
    clusterOptions.clusterRetryStrategy = (attempt) => delay?.(attempt) ?? null;
  }
  const cluster = new Cluster(seeds, clusterOptions);
  // ioredis connects to a node on its first command. Without an offline queue, the commands
  // that reach a node while that first connection is under way are refused ("Connection is
  // closed"), which the breaker takes for an outage: a burst of requests at start, or on a
  // master just promoted, would open the circuit. So each node is connected as soon as the
  // slot map names it.
  cluster.on("+node", (node: Redis) => {
    if (node.status === "wait") node.connect().catch(() => {});
  });
  return cluster;
}

/**
 * Resolves once every master's connection answers (a cluster), or at once (one server, whose
 * `ready` already says so). Rejects when one does not.
 */
export async function mastersConnected(client: RedisClient): Promise<void> {
  if (!(client instanceof Cluster)) return;
  await Promise.all(client.nodes("master").map((node) => node.ping()));
}

/** The masters of `client` (a cluster), or the one server. */
export function masters(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes("master") : [client];
}
