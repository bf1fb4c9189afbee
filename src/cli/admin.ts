/**
 * `receiptd admin purge [--prefix P] [--schema S] [--yes]`: tears a deployment's shared state
 * down (docs/operations.md, "Teardown"). `--prefix` removes every Redis key under the prefix
 * (`REDIS_URL`; caps, digest cache, nonce ledger, challenges and the BullMQ queues), `--schema`
 * drops the PostgreSQL schema with its tables (`DATABASE_URL`). Without `--yes` it only says
 * what it would remove, so the command can be checked before it is meant.
 */

import { Cluster } from "ioredis";
import pg from "pg";
import type { Env } from "../io/env.js";
import { createRedisClient, masters } from "../redis/client.js";
import { normalisePrefix } from "../redis/keys.js";
import { type RedisTarget, redisTargetOf } from "../redis/target.js";
import { ConfigError, loadConfig } from "../service/config.js";
import { quoteSchema } from "../storage/pg-migrations.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { type CliIo, processIo } from "./entry.js";
import { CliUsageError, parseAction, parseCommand, usageRefusal } from "./parse-command.js";

export const USAGE = "usage: receiptd admin purge [--prefix PREFIX] [--schema SCHEMA] [--yes]";

const HELP = `${USAGE}

Removes a deployment's shared state; stop every process that uses it first.
  --prefix PREFIX  every Redis key under PREFIX: (REDIS_URL, or every master of
                   REDIS_CLUSTER_NODES' cluster): daily caps, the digest cache,
                   the x402 nonce ledger, evaluation challenges and the BullMQ queues
                   (pending jobs included)
  --schema SCHEMA  DROP SCHEMA SCHEMA CASCADE in DATABASE_URL's database: API keys, anchors,
                   revocation documents, settlement receipts, crystals
  --yes            do it; without --yes nothing is removed and it prints what would be
Nothing else is touched: other prefixes and schemas, DATA_DIR (identity files, audit).
Exit codes: 0 done (or shown), 2 usage, configuration or connection error.
`;

class PurgeError extends codedErrorClass("purge_failed") {}

const CONNECT_TIMEOUT_MS = 5_000;

/** Redis's glob characters, escaped so the prefix matches only itself. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

/**
 * The keys under `prefix` (normalised as the service does: `receiptd` → `receiptd:`). SCAN
 * walks one server's keys only, so on a Redis Cluster every master is scanned (replicas hold
 * copies of their master's keys). Keys are unlinked one at a time there: a multi-key UNLINK
 * must stay in one slot, and the keys a scan returns do not.
 */
async function purgeRedisPrefix(
  target: RedisTarget,
  prefix: string,
  remove: boolean,
): Promise<number> {
  const client = createRedisClient(target, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    const cluster = client instanceof Cluster;
    let count = 0;
    for (const server of masters(client)) {
      let cursor = "0";
      do {
        const [next, keys] = await server.scan(
          cursor,
          "MATCH",
          `${globEscape(normalisePrefix(prefix))}*`,
          "COUNT",
          1000,
        );
        count += keys.length;
        if (remove && keys.length > 0) {
          if (cluster) await Promise.all(keys.map((key) => client.unlink(key)));
          else await client.unlink(...keys);
        }
        cursor = next;
      } while (cursor !== "0");
    }
    return count;
  } catch (error) {
    throw new PurgeError(`redis: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    client.disconnect();
  }
}

/** The schema's table count (null: no such schema), dropped with them when `remove`. */
async function purgeSchema(url: string, schema: string, remove: boolean): Promise<number | null> {
  const quoted = quoteSchema(schema);
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  try {
    await client.connect();
    const exists = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    if (exists.rowCount === 0) return null;
    const tables = await client.query<{ count: string }>(
      "SELECT count(*) AS count FROM information_schema.tables WHERE table_schema = $1",
      [schema],
    );
    if (remove) await client.query(`DROP SCHEMA ${quoted} CASCADE`);
    return Number(tables.rows[0]?.count ?? 0);
  } catch (error) {
    throw new PurgeError(`postgresql: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

interface PurgeRequest {
  prefix: string | undefined;
  schema: string | undefined;
  remove: boolean;
}

function readPurge(argv: string[], io: CliIo): PurgeRequest | number {
  return parseCommand(argv, io, {
    options: {
      prefix: { type: "string" },
      schema: { type: "string" },
      yes: { type: "boolean" },
    },
    usage: USAGE,
    help: HELP,
    read: ({ values: { prefix, schema, yes } }) => {
      if (prefix === undefined && schema === undefined) {
        throw new CliUsageError("admin purge needs --prefix, --schema or both");
      }
      if (prefix !== undefined && normalisePrefix(prefix) === "") {
        throw new CliUsageError("--prefix must not be empty: it would match every key");
      }
      if (schema !== undefined) {
        try {
          quoteSchema(schema);
        } catch (error) {
          throw new CliUsageError(`--schema: ${(error as Error).message}`);
        }
      }
      return { prefix, schema, remove: yes ?? false };
    },
  });
}

async function purge(request: PurgeRequest, io: CliIo, env: Env): Promise<number> {
  const { prefix, schema, remove } = request;
  const config = loadConfig(env);
  const done = remove ? "removed" : "would remove";
  if (prefix !== undefined) {
    const target = redisTargetOf(config);
    if (target === null) {
      throw new CliUsageError("--prefix needs REDIS_URL or REDIS_CLUSTER_NODES");
    }
    const count = await purgeRedisPrefix(target, prefix, remove);
    io.stdout(`redis: ${done} ${count} key(s) under '${normalisePrefix(prefix)}'\n`);
  }
  if (schema !== undefined) {
    if (config.databaseUrl === null) throw new CliUsageError("--schema needs DATABASE_URL");
    const tables = await purgeSchema(config.databaseUrl, schema, remove);
    io.stdout(
      tables === null
        ? `postgresql: no schema '${schema}'\n`
        : `postgresql: ${remove ? "dropped" : "would drop"} schema '${schema}' ` +
            `(${tables} table(s))\n`,
    );
  }
  if (!remove) io.stdout("nothing removed: add --yes to remove it\n");
  return 0;
}

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const picked = parseAction(argv, io, { actions: ["purge"], usage: USAGE, help: HELP });
  if (typeof picked === "number") return picked;
  const request = readPurge(picked.rest, io);
  if (typeof request === "number") return request;
  try {
    return await purge(request, io, env);
  } catch (error) {
    const usage = usageRefusal(error, io, USAGE);
    if (usage !== undefined) return usage;
    if (error instanceof ConfigError || error instanceof PurgeError) {
      io.stderr(`error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
