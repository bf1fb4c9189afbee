/**
 * Distributed mode at the HTTP level (architecture.md "Two modes, one code path"): two web
 * instances and two queue workers sharing one Redis and one PostgreSQL schema behave as one
 * service — caps are hit
 * at the same count whichever instance serves, a cache miss on one is a hit on the other, an
 * anchor posted to one is readable from the other; `/health` reports both dependencies.
 * Everything lives under a private Redis prefix and a private PostgreSQL schema.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { distinctIssuersBundle } from "../../bench/fixtures.js";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { type QueueWorker, startReceiptdWorkers } from "../../queues/bullmq-worker.js";
import { countVerificationCost, unitsOf } from "../../src/service/cost.js";
import { ServiceIdentity } from "../../src/service/service-key.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { openDocumentStore } from "../../src/storage/open.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { settlementFields } from "../payments/support.js";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../redis/support.js";
import { startTestService, type TestService } from "../service/support/service.js";
import { corpusBytes } from "../support/corpus.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");

describe("two web instances on one Redis and one PostgreSQL", () => {
  const prefix = randomPrefix();
  const schema = privateSchema();
  let first: TestService;
  let second: TestService;
  const workers: QueueWorker[] = [];
  const workerStores: DocumentStore[] = [];

  before(async () => {
    const shared = {
      redisUrl: SHARED_REDIS_URL,
      redisPrefix: prefix,
      databaseUrl: DATABASE_URL,
      databaseSchema: schema,
    };
    first = await startTestService(shared, { anonymous: true });
    second = await startTestService(shared, { anonymous: true });
    // Two worker processes' worth of BullMQ workers, each with its own store connection;
    // they sign with the deployment's key (here the first instance's).
    const identity = ServiceIdentity.open(first.config.dataDir);
    for (let index = 0; index < 2; index += 1) {
      const store = await openDocumentStore(first.config);
      workerStores.push(store);
      workers.push(
        ...startReceiptdWorkers({
          redis: SHARED_REDIS_URL,
          prefix,
          store,
          signer: () => identity.signer(),
          log: { info() {}, warn() {}, error() {} },
        }),
      );
    }
  });
  after(async () => {
    await first.close();
    await second.close();
    for (const worker of workers) await worker.close(5_000);
    for (const store of workerStores) await store.close();
    const cleanup = await openTestRedis(prefix);
    const keys = await keysUnder(cleanup.client, prefix);
    if (keys.length > 0) await cleanup.client.unlink(...keys);
    await cleanup.close();
    await dropSchema(schema);
  });

  test("/health reports Redis and PostgreSQL", async () => {
    const health = await first.app.inject({ method: "GET", url: "/health" });
    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.json(), { ok: true, redis: "up", db: "up" });
  });

  test("a key made through one instance works on the other, and its cap is shared", async () => {
    const { key } = await first.app.accessServices.keys.create({ name: "shared", dailyCap: 5 });
    const statuses: number[] = [];
    const remaining: unknown[] = [];
    for (let call = 0; call < 7; call += 1) {
      const service = call % 2 === 0 ? first : second;
      const response = await service.app.inject({
        method: "POST",
        url: "/verify",
        headers: { "x-svc-key": key },
        payload: GOOD,
      });
      statuses.push(response.statusCode);
      remaining.push(response.headers["x-ratelimit-remaining"]);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
    assert.deepEqual(remaining, ["4", "3", "2", "1", "0", "0", "0"]);
  });

  test("a request charged several units by its cost spends them in the shared cap", {
    timeout: 120_000,
  }, async () => {
    const heavy = distinctIssuersBundle(1_000_000);
    const units = unitsOf(countVerificationCost([parseJson(heavy)], heavy.length));
    assert.ok(units >= 2);
    const bases: string[] = [];
    for (const instance of [first, second]) {
      await instance.app.listen({ host: "127.0.0.1", port: 0 });
      bases.push(`http://127.0.0.1:${(instance.app.server.address() as AddressInfo).port}`);
    }
    const verify = async (base: string | undefined, key: string, body: Buffer) => {
      const response = await fetch(`${base}/verify`, {
        method: "POST",
        headers: { "x-svc-key": key, "content-type": "application/json" },
        body,
      });
      const json = (await response.json()) as { error?: string };
      return {
        status: response.status,
        error: json.error,
        remaining: Number(response.headers.get("x-ratelimit-remaining")),
      };
    };
    const { key } = await first.app.accessServices.keys.create({ name: "heavy", dailyCap: 50 });
    const charged = await verify(bases[0], key, heavy);
    assert.equal(charged.status, 200);
    assert.equal(charged.remaining, 50 - units);
    // The other instance counts on from there: the units are in Redis.
    const next = await verify(bases[1], key, GOOD);
    assert.equal(next.status, 200);
    assert.equal(next.remaining, 49 - units);
    // A cap short of the estimate is refused before the work, on either instance, uncharged.
    const short = await first.app.accessServices.keys.create({
      name: "short",
      dailyCap: units - 1,
    });
    const refused = await verify(bases[1], short.key, heavy);
    assert.deepEqual(
      { status: refused.status, error: refused.error, remaining: refused.remaining },
      { status: 429, error: "cost_exceeds_cap", remaining: units - 1 },
    );
  });

  test("a cache miss on one instance is a hit on the other", async () => {
    const { key } = await first.app.accessServices.keys.create({ name: "cache" });
    const headers = { "x-svc-key": key };
    const miss = await first.app.inject({
      method: "POST",
      url: "/verify?cache=1",
      headers,
      payload: GOOD,
    });
    assert.equal(miss.json().cache.hit, false);
    const hit = await second.app.inject({
      method: "POST",
      url: "/verify?cache=1",
      headers,
      payload: GOOD,
    });
    assert.equal(hit.json().cache.hit, true);
    assert.equal(hit.json().cache.cached_at, miss.json().cache.cached_at);
  });

  test("an anchor posted to one instance is readable from the other", async () => {
    const { key } = await second.app.accessServices.keys.create({ name: "anchors" });
    const digest = sha256("two instances");
    const posted = await first.app.inject({
      method: "POST",
      url: "/anchors",
      headers: { "x-svc-key": key },
      payload: {
        digest: `sha256:${digest.toString("hex")}`,
        proof: pendingProof(digest).toString("base64"),
      },
    });
    assert.equal(posted.statusCode, 200, posted.body);
    const read = await second.app.inject({
      method: "GET",
      url: `/anchors/sha256:${digest.toString("hex")}`,
    });
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().digest, `sha256:${digest.toString("hex")}`);
  });

  test("a settlement posted to one instance is signed by a worker and served by the other", async () => {
    const tx = `0x${sha256("two instances tx").toString("hex")}`;
    const posted = await first.app.inject({
      method: "POST",
      url: "/payment-receipts",
      remoteAddress: "127.0.0.1",
      headers: { "x-internal-token": await readFile(first.config.internalTokenFile, "utf8") },
      payload: settlementFields(tx),
    });
    assert.equal(posted.statusCode, 200, posted.body);
    const read = await second.app.inject({ method: "GET", url: `/receipts/${tx}` });
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().receipt.tx, tx);
  });
});
