/** API keys, daily caps and the anonymous bucket at the door (service.md §9), over HTTP. */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KeyStore } from "../../../src/access/api-keys.js";
import { corpusBytes } from "../../support/corpus.js";
import { startTestService, type TestService } from "../support/service.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const START = Date.UTC(2026, 10, 21, 12, 0, 0);

interface Sent {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  json: Record<string, unknown>;
}

function verifyWith(service: TestService, headers: Record<string, string>): Promise<Sent> {
  return service.app
    .inject({ method: "POST", url: "/verify", payload: GOOD, headers })
    .then((response) => ({
      status: response.statusCode,
      headers: response.headers,
      json: response.json(),
    }));
}

function rateHeaders(sent: Sent) {
  return [
    sent.headers["x-ratelimit-limit"],
    sent.headers["x-ratelimit-remaining"],
    sent.headers["x-ratelimit-reset"],
  ];
}

describe("API keys and their daily caps", () => {
  const clock = { now: START };
  const lines: string[] = [];
  let service: TestService;
  let key: string;
  let keyId: string;
  before(async () => {
    service = await startTestService(
      { logLevel: "info", logDestination: { write: (line) => lines.push(line) } },
      { clock: () => clock.now, anonymous: true },
    );
    const created = await service.app.accessServices.keys.create({ name: "ci", dailyCap: 3 });
    key = created.key;
    keyId = created.record.id;
  });
  after(() => service.close());

  test("both headers are accepted; Remaining counts after the request; the 4th call is 429", async () => {
    const first = await verifyWith(service, { authorization: `Bearer ${key}` });
    assert.equal(first.status, 200);
    assert.equal(first.json.verdict, "TRUSTED");
    assert.deepEqual(rateHeaders(first), ["3", "2", String(12 * 3600)]);
    const second = await verifyWith(service, { "x-svc-key": key });
    assert.deepEqual(rateHeaders(second), ["3", "1", String(12 * 3600)]);
    const third = await verifyWith(service, { authorization: `bearer   ${key}` });
    assert.deepEqual(rateHeaders(third), ["3", "0", String(12 * 3600)]);

    const refused = await verifyWith(service, { "x-svc-key": key });
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error, "daily_cap_reached");
    assert.equal(typeof refused.json.hint, "string");
    assert.equal(refused.headers["retry-after"], "86400");
    assert.deepEqual(rateHeaders(refused), ["3", "0", String(12 * 3600)]);
  });

  test("the cap resets at 00:00 UTC", async () => {
    clock.now = Date.UTC(2026, 10, 22, 0, 0, 1);
    const next = await verifyWith(service, { "x-svc-key": key });
    assert.equal(next.status, 200);
    assert.deepEqual(rateHeaders(next), ["3", "2", String(86_399)]);
  });

  test("unknown, malformed and revoked keys are 401 invalid_key with WWW-Authenticate", async () => {
    const unknown = await verifyWith(service, { "x-svc-key": `svc_${"ab".repeat(24)}` });
    const malformed = await verifyWith(service, { authorization: "Bearer not-a-key" });
    for (const refused of [unknown, malformed]) {
      assert.equal(refused.status, 401);
      assert.equal(refused.json.error, "invalid_key");
      assert.ok(refused.json.hint && refused.json.docs);
      assert.match(String(refused.headers["www-authenticate"]), /^Bearer /);
      assert.equal(refused.headers["x-ratelimit-limit"], undefined);
    }

    // Revoked by another process sharing the store (the CLI), seen without a restart.
    const created = await service.app.accessServices.keys.create({ name: "soon-gone" });
    assert.equal((await verifyWith(service, { "x-svc-key": created.key })).status, 200);
    const cli = new KeyStore(service.app.documentStore, { defaultDailyCap: 1000 });
    assert.equal((await cli.revoke("soon-gone")).status, "revoked");
    clock.now += 1_001;
    const revoked = await verifyWith(service, { "x-svc-key": created.key });
    assert.equal(revoked.status, 401);
    assert.equal(revoked.json.error, "invalid_key");
  });

  test("a key created by another process works on its first request", async () => {
    const cli = new KeyStore(service.app.documentStore, { defaultDailyCap: 1000 });
    const created = await cli.create({ name: "fresh" });
    const sent = await verifyWith(service, { authorization: `Bearer ${created.key}` });
    assert.equal(sent.status, 200);
    assert.equal(sent.headers["x-ratelimit-limit"], "1000");
  });

  test("without a key and with payments off: 401 missing_key", async () => {
    const refused = await verifyWith(service, {});
    assert.equal(refused.status, 401);
    assert.equal(refused.json.error, "missing_key");
    assert.match(String(refused.headers["www-authenticate"]), /^Bearer /);
  });

  test("keys never reach the logs or the store in clear; audit lines name the key id", async () => {
    await service.app.accessServices.audit.flush();
    const logged = lines.join("\n");
    assert.ok(!logged.includes(key));
    assert.ok(!logged.includes(key.slice(4)));
    const storeDir = join(service.config.dataDir, "store", "keys");
    for (const name of await readdir(storeDir)) {
      const text = await readFile(join(storeDir, name), "utf8");
      assert.ok(!text.includes(key.slice(4)), name);
    }
    const auditFiles = await readdir(service.config.auditDir);
    const audit = (
      await Promise.all(
        auditFiles.map((name) => readFile(join(service.config.auditDir, name), "utf8")),
      )
    ).join("");
    assert.ok(!audit.includes(key.slice(4)));
    const keyLines = audit
      .split("\n")
      .filter((line) => line.includes(`"key:${keyId}"`))
      .map((line) => JSON.parse(line));
    assert.ok(keyLines.length >= 4);
    for (const line of keyLines) {
      assert.equal(line.route, "/verify");
      assert.equal(line.method, "POST");
    }
    assert.ok(keyLines.some((line) => line.status === 429));
  });
});

describe("the anonymous bucket", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({ limits: { anonymousDailyCap: 3 } }, { anonymous: true });
  });
  after(() => service.close());

  test("keyless GETs and MCP discovery share it; /health and metadata are not counted", async () => {
    const described = await service.app.inject({ method: "GET", url: "/notarize" });
    assert.equal(described.statusCode, 200);
    assert.equal(described.headers["x-ratelimit-limit"], "3");
    assert.equal(described.headers["x-ratelimit-remaining"], "2");
    const health = await service.app.inject({ method: "GET", url: "/health" });
    assert.equal(health.statusCode, 200);
    assert.equal(health.headers["x-ratelimit-limit"], undefined);

    const discovery = await service.app.inject({
      method: "POST",
      url: "/mcp",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
      },
      payload: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    assert.equal(discovery.statusCode, 200);
    assert.equal(discovery.headers["x-ratelimit-remaining"], "1");
    const anchor = await service.app.inject({
      method: "GET",
      url: `/anchors/sha256:${"0".repeat(64)}`,
    });
    // A 404 is not a result: it gives its place back (charging.test.ts has the others).
    assert.equal(anchor.statusCode, 404);
    assert.equal(anchor.headers["x-ratelimit-remaining"], "1");
    const card = await service.app.inject({
      method: "GET",
      url: "/.well-known/mcp/server-card.json",
    });
    assert.equal(card.statusCode, 200);
    assert.equal(card.headers["x-ratelimit-remaining"], "0");

    const spent = await service.app.inject({ method: "GET", url: "/notarize" });
    assert.equal(spent.statusCode, 429);
    assert.equal(spent.json().error, "daily_cap_reached");
    assert.equal(spent.headers["retry-after"], "86400");
    assert.equal((await service.app.inject({ method: "GET", url: "/health" })).statusCode, 200);
    // Metadata is answered, uncounted, after the cap is spent.
    for (const url of ["/info", "/openapi.json"]) {
      const metadata = await service.app.inject({ method: "GET", url });
      assert.equal(metadata.statusCode, 200);
      assert.equal(metadata.headers["x-ratelimit-limit"], undefined);
    }
  });
});
