/**
 * bench:fleet's counting proxies (bench/counting-proxies.ts), against the shared Redis and
 * PostgreSQL: a pipeline is one round trip, each statement of a simple query and each
 * Execute of a prepared statement counts once, under its SQL verb.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import pg from "pg";
import {
  type CountingProxy,
  type PostgresTraffic,
  postgresCountingProxy,
  type RedisTraffic,
  redisCountingProxy,
} from "../../bench/counting-proxies.js";
import { randomPrefix, SHARED_REDIS_URL } from "../redis/support.js";
import { DATABASE_URL } from "../support/pg.js";

describe("bench counting proxies", () => {
  let redisProxy: CountingProxy<RedisTraffic>;
  let postgresProxy: CountingProxy<PostgresTraffic>;
  before(async () => {
    redisProxy = await redisCountingProxy(Number(new URL(SHARED_REDIS_URL).port || 6379));
    postgresProxy = await postgresCountingProxy(Number(new URL(DATABASE_URL).port || 5432));
  });
  after(async () => {
    await redisProxy.close();
    await postgresProxy.close();
  });

  test("Redis: one command and one pipeline of three are two round trips", async () => {
    const prefix = randomPrefix();
    const client = new Redis({ port: redisProxy.port, host: "127.0.0.1", lazyConnect: true });
    await client.connect();
    try {
      const before = redisProxy.read();
      await client.set(`${prefix}a`, "1");
      await client.pipeline().incr(`${prefix}a`).get(`${prefix}a`).del(`${prefix}a`).exec();
      const after = redisProxy.read();
      assert.equal(after.roundTrips - before.roundTrips, 2);
      assert.ok(after.bytes > before.bytes);
      assert.equal(after.connections, 1);
    } finally {
      client.disconnect();
    }
  });

  test("PostgreSQL: statements by verb, round trips by Sync or simple Query", async () => {
    const url = new URL(DATABASE_URL);
    url.port = String(postgresProxy.port);
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      const before = postgresProxy.read();
      // A simple query of two statements (one round trip), then the same parameterised
      // statement twice under a name: parsed once, executed twice (two round trips).
      await client.query("SELECT 1; select ';' AS semicolon");
      const named = { name: "fleet-test", text: "SELECT $1::int AS n", values: [1] };
      await client.query(named);
      await client.query(named);
      const after = postgresProxy.read();
      assert.equal(after.statements - before.statements, 4);
      assert.equal(after.roundTrips - before.roundTrips, 3);
      assert.equal((after.byVerb.SELECT ?? 0) - (before.byVerb.SELECT ?? 0), 4);
    } finally {
      await client.end();
    }
  });
});
