/**
 * `receiptd admin purge`, the runbook's teardown (docs/operations.md), against the shared
 * Redis and PostgreSQL: under a test-only prefix and schema, next to a sibling prefix and
 * schema that must survive, first without `--yes` (nothing removed), then with it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { main } from "../../src/cli/admin.js";
import { removePrefix, TEST_REDIS_URL, testPrefix } from "../support/bullmq-redis.js";
import { DATABASE_URL, dropSchema, privateSchema, withAdmin } from "../support/pg.js";

const prefix = testPrefix();
/** Starts with `prefix` but is another deployment's: `<prefix>x:…`, not `<prefix>:…`. */
const sibling = `${prefix}x`;
const schema = privateSchema();
const otherSchema = privateSchema();
const env = { REDIS_URL: TEST_REDIS_URL, DATABASE_URL, DATA_DIR: "/nonexistent-receiptd-data" };

async function run(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(
    argv,
    { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) },
    env,
  );
  return { code, stdout, stderr };
}

async function keysUnder(match: string): Promise<string[]> {
  const client = new Redis(TEST_REDIS_URL);
  try {
    return (await client.keys(`${match}*`)).sort();
  } finally {
    client.disconnect();
  }
}

async function schemaExists(name: string): Promise<boolean> {
  return withAdmin(async (client) => {
    const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [name]);
    return found.rowCount === 1;
  });
}

describe("receiptd admin purge", () => {
  before(async () => {
    const client = new Redis(TEST_REDIS_URL);
    try {
      await client.set(`${prefix}:cap:anonymous:2026-11-26`, "3");
      await client.set(`${prefix}:settlements:meta`, "x");
      await client.set(`${sibling}:cap:anonymous:2026-11-26`, "5");
    } finally {
      client.disconnect();
    }
    await withAdmin(async (client) => {
      for (const name of [schema, otherSchema]) {
        await client.query(`CREATE SCHEMA "${name}"`);
        await client.query(`CREATE TABLE "${name}".documents (id text)`);
      }
    });
  });
  after(async () => {
    await removePrefix(prefix);
    await removePrefix(sibling);
    await dropSchema(schema);
    await dropSchema(otherSchema);
  });

  test("without --yes it says what it would remove and removes nothing", async () => {
    const result = await run(["purge", "--prefix", prefix, "--schema", schema]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      `redis: would remove 2 key(s) under '${prefix}:'\n` +
        `postgresql: would drop schema '${schema}' (1 table(s))\n` +
        "nothing removed: add --yes to remove it\n",
    );
    assert.equal((await keysUnder(`${prefix}:`)).length, 2);
    assert.ok(await schemaExists(schema));
  });

  test("with --yes it removes the prefix's keys and the schema, and nothing else", async () => {
    const result = await run(["purge", "--prefix", prefix, "--schema", schema, "--yes"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      `redis: removed 2 key(s) under '${prefix}:'\npostgresql: dropped schema '${schema}' (1 table(s))\n`,
    );
    assert.deepEqual(await keysUnder(`${prefix}:`), []);
    assert.deepEqual(await keysUnder(`${sibling}:`), [`${sibling}:cap:anonymous:2026-11-26`]);
    assert.equal(await schemaExists(schema), false);
    assert.ok(await schemaExists(otherSchema));
  });

  test("a schema that is not there is said so; a second run removes nothing", async () => {
    const result = await run(["purge", "--prefix", prefix, "--schema", schema, "--yes"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      `redis: removed 0 key(s) under '${prefix}:'\npostgresql: no schema '${schema}'\n`,
    );
  });

  test("usage errors: nothing named, an empty prefix, a schema name that is not plain", async () => {
    for (const [argv, message] of [
      [["purge"], "admin purge needs --prefix, --schema or both"],
      [["purge", "--prefix", ""], "--prefix must not be empty: it would match every key"],
      [["purge", "--schema", 'x"; DROP'], "--schema: schema name must match"],
      [["purge", "--prefix"], "Option '--prefix <value>' argument missing"],
    ] as const) {
      const result = await run([...argv]);
      assert.equal(result.code, 2, argv.join(" "));
      assert.ok(result.stderr.startsWith(`error: ${message}`), result.stderr);
      assert.equal(result.stdout, "");
    }
  });

  test("a prefix without REDIS_URL is refused; an unreachable server is one line", async () => {
    const missing = await main(["purge", "--prefix", prefix], collector(), {});
    assert.equal(missing, 2);
    const lines: string[] = [];
    const code = await main(
      ["purge", "--schema", schema],
      { stdout: () => {}, stderr: (text) => lines.push(text) },
      { DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" },
    );
    assert.equal(code, 2);
    assert.match(lines.join(""), /^error: postgresql: .*\n$/);
  });
});

function collector() {
  return { stdout: () => {}, stderr: () => {} };
}
