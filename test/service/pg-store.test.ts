/**
 * The service on the PostgreSQL document store (distributed mode): it starts on a private
 * schema, keeps its documents there, and answers 503 while the database is unreachable.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import Fastify from "fastify";
import { registerErrorHandling } from "../../src/service/plugins/errors.js";
import { DocumentStoreUnavailableError } from "../../src/storage/document-store.js";
import { dropSchema, privateSchema, TcpProxy, withAdmin } from "../support/pg.js";
import { startTestService, type TestService } from "./support/service.js";

describe("store outages in the error handler", () => {
  test("an unhandled DocumentStoreUnavailableError is 503 store_unavailable, Retry-After 1", async () => {
    const app = Fastify({ logger: false });
    registerErrorHandling(app);
    app.get("/", async () => {
      throw new DocumentStoreUnavailableError("document database unavailable: refused");
    });
    try {
      const response = await app.inject({ method: "GET", url: "/" });
      assert.equal(response.statusCode, 503);
      assert.equal(response.headers["retry-after"], "1");
      assert.deepEqual(response.json(), { error: "store_unavailable" });
    } finally {
      await app.close();
    }
  });
});

describe("service on PostgreSQL", () => {
  const schema = privateSchema();
  const proxy = new TcpProxy();
  let service: TestService;
  const anchor = `sha256:${randomBytes(32).toString("hex")}`;

  before(async () => {
    await proxy.listen();
    service = await startTestService({ databaseUrl: proxy.url, databaseSchema: schema });
  });
  after(async () => {
    await proxy.cut();
    await service.close();
    await dropSchema(schema);
  });

  test("the service's API key lives in the database schema", async () => {
    const rows = await withAdmin((client) =>
      client.query<{ count: string }>(
        `SELECT count(*) FROM "${schema}".documents WHERE collection = 'keys'`,
      ),
    );
    assert.ok(Number(rows.rows[0]?.count) >= 1);
  });

  test("reads answer 503 while the database is cut, and normally once it is back", async () => {
    const absent = await service.app.inject({ method: "GET", url: `/anchors/${anchor}` });
    assert.equal(absent.statusCode, 404);
    assert.deepEqual(absent.json(), { error: "anchor_not_found" });

    await proxy.cut();
    const down = await service.app.inject({ method: "GET", url: `/anchors/${anchor}` });
    assert.equal(down.statusCode, 503);
    assert.equal(down.headers["retry-after"], "1");
    assert.deepEqual(down.json(), {
      error: "anchor_store_unavailable",
      detail: "the anchor store cannot be read right now, retry",
    });

    await proxy.restore();
    const back = await service.app.inject({ method: "GET", url: `/anchors/${anchor}` });
    assert.equal(back.statusCode, 404);
  });
});
