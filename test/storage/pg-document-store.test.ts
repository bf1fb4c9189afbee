/**
 * The PostgreSQL document store: the shared contract, plus migrations, exact bytes, and
 * outages. The database is shared (CI included), so every fixture works in a schema of its
 * own (`receiptd_test_<random hex>`) and drops it afterwards.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { DocumentStoreUnavailableError } from "../../src/storage/document-store.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { openDocumentStore } from "../../src/storage/open.js";
import {
  likePrefixPattern,
  PgDocumentStore,
  type PgDocumentStoreOptions,
} from "../../src/storage/pg-document-store.js";
import { MIGRATIONS, runMigrations } from "../../src/storage/pg-migrations.js";
import {
  DATABASE_URL,
  dropSchema,
  privateSchema,
  rowBody,
  TcpProxy,
  withAdmin,
} from "../support/pg.js";
import { documentStoreContract } from "./document-store-contract.js";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (value: Uint8Array | null) =>
  value === null ? null : new TextDecoder().decode(value);

async function freshStore(options: Partial<PgDocumentStoreOptions> = {}) {
  const schema = privateSchema();
  const store = await PgDocumentStore.open({ url: DATABASE_URL, schema, ...options });
  return {
    schema,
    store,
    async dispose() {
      await store.close();
      await dropSchema(schema);
    },
  };
}

documentStoreContract("PgDocumentStore", () => freshStore());

describe("PgDocumentStore migrations", () => {
  test("the first run applies every migration; later runs apply none", async () => {
    const schema = privateSchema();
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
    try {
      assert.deepEqual(
        await runMigrations(pool, schema),
        MIGRATIONS.map((migration) => migration.version),
      );
      assert.deepEqual(await runMigrations(pool, schema), []);
      const store = await PgDocumentStore.open({ url: DATABASE_URL, schema });
      await store.close();
      const recorded = await pool.query<{ version: number; name: string }>(
        `SELECT version, name FROM "${schema}".schema_migrations ORDER BY version`,
      );
      assert.deepEqual(
        recorded.rows,
        MIGRATIONS.map(({ version, name }) => ({ version, name })),
      );
    } finally {
      await pool.end();
      await dropSchema(schema);
    }
  });

  test("stores opening together on a new schema apply each migration exactly once", async () => {
    const schema = privateSchema();
    const pools = Array.from(
      { length: 4 },
      () => new pg.Pool({ connectionString: DATABASE_URL, max: 1 }),
    );
    try {
      const runs = await Promise.all(pools.map((pool) => runMigrations(pool, schema)));
      assert.deepEqual(
        runs.flat().sort((a, b) => a - b),
        MIGRATIONS.map((migration) => migration.version),
      );
      const stores = await Promise.all(
        Array.from({ length: 3 }, () => PgDocumentStore.open({ url: DATABASE_URL, schema })),
      );
      const [first, second] = stores;
      assert.ok(first && second);
      assert.equal((await first.create("keys", "k", bytes("one"))).created, true);
      assert.equal(text(await second.get("keys", "k")), "one");
      await Promise.all(stores.map((store) => store.close()));
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
      await dropSchema(schema);
    }
  });

  test("a failing migration leaves nothing behind, and the next run starts over", async () => {
    const schema = privateSchema();
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    const broken = [
      ...MIGRATIONS,
      { version: 999, name: "broken", sql: () => "SELECT no_such_function()" },
    ];
    try {
      await assert.rejects(runMigrations(pool, schema, broken), { code: "42883" });
      const present = await pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
      assert.equal(present.rowCount, 0);
      assert.deepEqual(
        await runMigrations(pool, schema),
        MIGRATIONS.map((migration) => migration.version),
      );
    } finally {
      await pool.end();
      await dropSchema(schema);
    }
  });

  test("schema names that are not plain lowercase identifiers are refused", async () => {
    for (const schema of ["Receiptd", 'x"; DROP SCHEMA public; --', "", "a-b", "x".repeat(64)]) {
      await assert.rejects(PgDocumentStore.open({ url: DATABASE_URL, schema }), RangeError);
    }
  });
});

describe("PgDocumentStore data", () => {
  let fixture: Awaited<ReturnType<typeof freshStore>>;
  before(async () => {
    fixture = await freshStore();
  });
  after(() => fixture.dispose());

  test("bytes round-trip exactly, including every byte value and invalid UTF-8", async () => {
    const { store, schema } = fixture;
    const every = Uint8Array.from({ length: 512 }, (_, index) => (index * 7) % 256);
    const invalid = Uint8Array.of(0xff, 0xfe, 0x00, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x5c, 0x78);
    const offsetView = new Uint8Array(Uint8Array.of(9, 9, 0x80, 0x00, 0xff, 9).buffer, 2, 3);
    for (const [id, value] of [
      ["every", every],
      ["invalid", invalid],
      ["empty", new Uint8Array(0)],
      ["view", offsetView],
    ] as const) {
      assert.equal((await store.create("anchors", id, value)).created, true);
      assert.deepEqual(
        new Uint8Array((await store.get("anchors", id)) ?? []),
        new Uint8Array(value),
      );
      assert.deepEqual(new Uint8Array((await rowBody(schema, "anchors", id)) ?? []), value);
      const again = await store.create("anchors", id, bytes("other"));
      assert.deepEqual(new Uint8Array(again.stored), new Uint8Array(value));
    }
    assert.equal(await store.replace("anchors", "invalid", Uint8Array.of(0xff), every), false);
    assert.equal(await store.replace("anchors", "invalid", invalid, every), true);
    assert.deepEqual(new Uint8Array((await store.get("anchors", "invalid")) ?? []), every);
  });

  test("list treats %, _ and \\ in a prefix literally", async () => {
    const { store } = fixture;
    const ids = ["p%1", "p%2", "p_1", "pa1", "p\\1", "p\\\\1", "pX", "q%"];
    for (const id of ids) await store.create("tenants", id, bytes("{}"));
    assert.deepEqual(await store.list("tenants", "p%"), ["p%1", "p%2"]);
    assert.deepEqual(await store.list("tenants", "p_"), ["p_1"]);
    assert.deepEqual(await store.list("tenants", "p\\"), ["p\\1", "p\\\\1"]);
    assert.deepEqual(await store.list("tenants", "p\\\\"), ["p\\\\1"]);
    assert.deepEqual(await store.list("tenants", "p"), [
      "p%1",
      "p%2",
      "pX",
      "p\\1",
      "p\\\\1",
      "p_1",
      "pa1",
    ]);
    assert.equal(likePrefixPattern("a%_\\"), "a\\%\\_\\\\%");
  });

  test("list orders by code point, like the file store", async () => {
    const { store } = fixture;
    const ids = ["o/\u{10FFFF}", "o/\u{1F600}", "o/\uFFFD", "o/\uE000", "o/é", "o/Z", "o/a", "o/~"];
    for (const id of ids) await store.create("crystals", id, bytes("{}"));
    const dataDir = await mkdtemp(join(tmpdir(), "receiptd-order-"));
    try {
      const files = new FsDocumentStore(dataDir);
      for (const id of ids) await files.create("crystals", id, bytes("{}"));
      const expected = [
        "o/Z",
        "o/a",
        "o/~",
        "o/é",
        "o/\uE000",
        "o/\uFFFD",
        "o/\u{1F600}",
        "o/\u{10FFFF}",
      ];
      assert.deepEqual(await store.list("crystals", "o/"), expected);
      assert.deepEqual(await files.list("crystals", "o/"), expected);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test("ids PostgreSQL text cannot hold exactly are refused, not altered", async () => {
    const { store } = fixture;
    for (const id of ["", "a\u0000b", "lone\uD800", "\uDC00x", "x".repeat(1025)]) {
      await assert.rejects(store.get("keys", id), RangeError);
      await assert.rejects(store.create("keys", id, bytes("{}")), RangeError);
    }
    assert.equal((await store.create("keys", "é".repeat(512), bytes("{}"))).created, true);
  });
});

describe("PgDocumentStore outages", () => {
  test("a database that cannot be reached at start is unavailable, not a crash", async () => {
    const proxy = new TcpProxy();
    await proxy.listen();
    await proxy.cut();
    await assert.rejects(
      PgDocumentStore.open({
        url: proxy.url,
        schema: privateSchema(),
        connectionTimeoutMillis: 2000,
      }),
      DocumentStoreUnavailableError,
    );
  });

  // A real restart of the shared server is not allowed, so the outage is a proxy cut: to the
  // store it looks the same (connections drop, then new ones are refused, then accepted).
  test("writes during a cut are refused whole; acknowledged writes survive; service resumes", async () => {
    const proxy = new TcpProxy();
    await proxy.listen();
    const schema = privateSchema();
    const store = await PgDocumentStore.open({
      url: proxy.url,
      schema,
      connectionTimeoutMillis: 2000,
    });
    try {
      const acknowledged = Array.from({ length: 12 }, (_, index) => `sha256:before-${index}`);
      await Promise.all(acknowledged.map((id) => store.create("anchors", id, bytes(id))));
      await store.create("revocations", "did:key:doc", bytes("v1"));

      // A statement in flight when the connection is cut.
      proxy.mode = "blackhole";
      const dropped = proxy.requestDropped();
      const inFlight = store.create("anchors", "sha256:in-flight", bytes("x"));
      await dropped;
      await proxy.cut();
      await assert.rejects(inFlight, DocumentStoreUnavailableError);

      // Statements issued while the database is down.
      await assert.rejects(
        store.create("anchors", "sha256:during", bytes("x")),
        DocumentStoreUnavailableError,
      );
      await assert.rejects(
        store.replace("revocations", "did:key:doc", bytes("v1"), bytes("v2")),
        DocumentStoreUnavailableError,
      );
      await assert.rejects(store.get("anchors", "sha256:before-0"), DocumentStoreUnavailableError);
      await assert.rejects(store.list("anchors"), DocumentStoreUnavailableError);

      // Nothing refused reached the table.
      assert.equal(await rowBody(schema, "anchors", "sha256:in-flight"), null);
      assert.equal(await rowBody(schema, "anchors", "sha256:during"), null);
      assert.equal(text(await rowBody(schema, "revocations", "did:key:doc")), "v1");

      await proxy.restore();
      assert.equal((await store.create("anchors", "sha256:after", bytes("after"))).created, true);
      assert.equal(
        await store.replace("revocations", "did:key:doc", bytes("v1"), bytes("v2")),
        true,
      );
      const listed = await store.list("anchors", "sha256:before-");
      assert.deepEqual(listed, [...acknowledged].sort());
      for (const id of acknowledged) assert.equal(text(await store.get("anchors", id)), id);
    } finally {
      await proxy.cut();
      await store.close();
      await dropSchema(schema);
    }
  });

  test("a write whose reply is lost is unavailable, and retrying it is idempotent", async () => {
    const proxy = new TcpProxy();
    await proxy.listen();
    const schema = privateSchema();
    const store = await PgDocumentStore.open({
      url: proxy.url,
      schema,
      connectionTimeoutMillis: 2000,
    });
    try {
      proxy.mode = "drop-replies";
      const pending = store.create("settlements", "0xlost", bytes("first"));
      // Wait (on a direct connection) until the server has committed the row.
      while ((await rowBody(schema, "settlements", "0xlost")) === null) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      await proxy.cut();
      await assert.rejects(pending, DocumentStoreUnavailableError);
      await proxy.restore();
      const retried = await store.create("settlements", "0xlost", bytes("second"));
      assert.deepEqual(
        { created: retried.created, stored: text(retried.stored) },
        { created: false, stored: "first" },
      );
    } finally {
      await proxy.cut();
      await store.close();
      await dropSchema(schema);
    }
  });

  test("a database that goes silent times out as unavailable instead of hanging", async () => {
    const proxy = new TcpProxy();
    await proxy.listen();
    const schema = privateSchema();
    const store = await PgDocumentStore.open({
      url: proxy.url,
      schema,
      connectionTimeoutMillis: 300,
      statementTimeoutMillis: 200,
      queryTimeoutMillis: 300,
    });
    try {
      proxy.mode = "blackhole";
      await assert.rejects(
        store.create("anchors", "sha256:silent", bytes("x")),
        DocumentStoreUnavailableError,
      );
      // The timeout opened the breaker: later calls fail at once, without being sent.
      assert.equal(store.circuit, "open");
      proxy.mode = "blackhole";
      const dropped = proxy.requestDropped().then(() => "sent");
      const refused = store.get("anchors", "sha256:silent").then(
        () => "answered",
        (error: unknown) => (error instanceof DocumentStoreUnavailableError ? "refused" : error),
      );
      assert.equal(await Promise.race([refused, dropped]), "refused");
      proxy.mode = "pass";
      // Until the background probe finds the database again; then writes go through.
      while (store.circuit === "open") await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal((await store.create("anchors", "sha256:loud", bytes("x"))).created, true);
    } finally {
      await proxy.cut();
      await store.close();
      await dropSchema(schema);
    }
  });

  test("other database errors are not disguised as outages", async () => {
    const fixture = await freshStore();
    try {
      await withAdmin((client) => client.query(`DROP TABLE "${fixture.schema}".documents`));
      await assert.rejects(fixture.store.get("anchors", "sha256:x"), (error: unknown) => {
        assert.ok(!(error instanceof DocumentStoreUnavailableError));
        assert.equal((error as { code?: string }).code, "42P01");
        return true;
      });
    } finally {
      await fixture.dispose();
    }
  });
});

describe("openDocumentStore", () => {
  test("DATABASE_URL selects PostgreSQL in the given schema; without it, files", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "receiptd-open-"));
    const schema = privateSchema();
    try {
      const database = await openDocumentStore({
        dataDir,
        databaseUrl: DATABASE_URL,
        databaseSchema: schema,
      });
      assert.ok(database instanceof PgDocumentStore);
      await database.create("keys", "k", bytes("pg"));
      await database.close();
      assert.equal(text(await rowBody(schema, "keys", "k")), "pg");
      for (const databaseUrl of [null, undefined, ""]) {
        const files = await openDocumentStore({ dataDir, databaseUrl });
        assert.ok(files instanceof FsDocumentStore);
        assert.equal(await files.get("keys", "k"), null);
        await files.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await dropSchema(schema);
    }
  });
});
