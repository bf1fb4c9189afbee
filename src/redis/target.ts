/**
 * Where distributed mode's Redis is (issue 36): one server (`REDIS_URL`), or a Redis Cluster
 * (`REDIS_CLUSTER_NODES`, comma-separated `host:port` seeds). Types and parsing only: the ioredis
 * client is made in client.ts, loaded by the mode that uses it.
 */

export interface RedisNode {
  host: string;
  port: number;
}

/**
 * A Redis Cluster: the seeds (any reachable one is enough; the client learns the others from
 * `CLUSTER SLOTS`) and, when `REDIS_URL` is set too, that URL, whose user, password and
 * `rediss:` scheme (TLS) apply to every node.
 */
export interface RedisClusterTarget {
  clusterNodes: readonly RedisNode[];
  url: string | null;
}

/** A `redis://` / `rediss://` URL (one server), or a cluster. */
export type RedisTarget = string | RedisClusterTarget;

/** Parses `REDIS_CLUSTER_NODES`; throws `RangeError` with the offending entry. */
export function parseClusterNodes(text: string): RedisNode[] {
  const nodes = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      // `host:port`, `[v6]:port`; the last `:` separates the port.
      const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):([0-9]{1,5})$/.exec(entry);
      const port = Number(match?.[2]);
      if (match === null || match[1] === undefined || !(port >= 1 && port <= 65_535)) {
        throw new RangeError(`'${entry}' is not host:port`);
      }
      return { host: match[1].replace(/^\[|\]$/g, ""), port };
    });
  if (nodes.length === 0) throw new RangeError("no host:port given");
  return nodes;
}

/** The Redis of a configuration, or null in embedded mode. */
export function redisTargetOf(config: {
  redisUrl: string | null;
  redisClusterNodes: readonly RedisNode[] | null;
}): RedisTarget | null {
  if (config.redisClusterNodes !== null) {
    return { clusterNodes: config.redisClusterNodes, url: config.redisUrl };
  }
  return config.redisUrl;
}

/** Whether `target` is a cluster. */
export function isClusterTarget(target: RedisTarget): target is RedisClusterTarget {
  return typeof target !== "string";
}
