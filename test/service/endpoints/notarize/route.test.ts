/**
 * Context notarization over HTTP (issue 28), embedded (files) and distributed (PostgreSQL
 * and Redis): every refusal code, one boundary pair, the round trip POST → GET → 304, the
 * Idempotency-Key retry charged once, and a statement that still verifies after a rotation.
 * The rules themselves are test/notarization/request.test.ts's; this checks the route answers
 * them with the right status and body.
 */
import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { main as notarizationCli } from "../../../../src/cli/notarization.js";
import type { ConfigOverrides } from "../../../../src/service/config.js";
import { rotateServiceKey } from "../../../../src/service/key-rotation.js";
import { DocumentStoreUnavailableError } from "../../../../src/storage/document-store.js";
import { FsDocumentStore } from "../../../../src/storage/fs-document-store.js";
import { testSettings } from "../../../payments/support.js";
import { randomPrefix, SHARED_REDIS_URL } from "../../../redis/support.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../../../support/pg.js";
import { startTestService, type TestService } from "../../support/service.js";

const JSON_TYPE = "application/json; charset=utf-8";
const HEX = "ab".repeat(32);
const T0 = Date.parse("2026-11-26T12:00:00Z");

interface Notarized {
  notarized: true;
  digest: string;
  receipt: Record<string, unknown> & { issuer: string; issued_at: string };
  service: string;
  lookup_url: string;
}

interface Mode {
  name: string;
  overrides: () => ConfigOverrides;
  cleanup: () => Promise<void>;
}

const schema = privateSchema();
const MODES: Mode[] = [
  { name: "embedded", overrides: () => ({}), cleanup: async () => {} },
  {
    name: "distributed",
    overrides: () => ({
      redisUrl: SHARED_REDIS_URL,
      redisPrefix: randomPrefix(),
      databaseUrl: DATABASE_URL,
      databaseSchema: schema,
    }),
    cleanup: () => dropSchema(schema),
  },
];

for (const mode of MODES) {
  describe(`notarization routes (${mode.name})`, () => {
    let service: TestService;
    const clock = { now: T0 };
    const post = (payload: unknown, headers: Record<string, string> = {}) =>
      service.app.inject({
        method: "POST",
        url: "/notarize",
        headers: { "content-type": "application/json", ...headers },
        payload: typeof payload === "string" ? payload : JSON.stringify(payload),
      });
    const get = (digest: string, headers: Record<string, string> = {}) =>
      service.app.inject({ method: "GET", url: `/notarize/${digest}`, headers });
    const refused = async (payload: unknown, code: string, status = 400) => {
      const response = await post(payload);
      assert.equal(response.statusCode, status, response.body);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      const body = response.json<{ error: string; fields?: string[]; field?: string }>();
      assert.equal(body.error, code, response.body);
      return body;
    };

    before(async () => {
      service = await startTestService(mode.overrides(), { clock: () => clock.now });
    });
    after(async () => {
      await service.close();
      await mode.cleanup();
    });

    test("POST signs and stores; GET serves the document, then 304 on its ETag", async () => {
      clock.now += 1000;
      const response = await post({
        context_digest: `SHA256:${HEX.toUpperCase()}`,
        action: "summarize",
        metadata: { run: 7, ok: true },
      });
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      const answer = response.json<Notarized>();
      assert.equal(answer.notarized, true);
      assert.match(answer.digest, /^sha256:[0-9a-f]{64}$/);
      assert.equal(answer.lookup_url, `/notarize/${answer.digest.slice(7)}`);
      assert.equal(answer.service, "continuity-receipt-verify");
      assert.equal(answer.receipt.kind, "wm.context-notarization");
      assert.equal(answer.receipt.context_digest, `sha256:${HEX}`);
      assert.equal(answer.receipt.issued_at, `${new Date(clock.now).toISOString().slice(0, 19)}Z`);
      assert.equal(answer.receipt.issuer, service.app.serviceIdentity.signer().did);

      const read = await service.app.inject({ method: "GET", url: answer.lookup_url });
      assert.equal(read.statusCode, 200, read.body);
      const document = read.json<{ notarization: unknown; notarization_digest: string }>();
      assert.deepEqual(document.notarization, answer.receipt);
      assert.equal(document.notarization_digest, answer.digest);
      const etag = read.headers.etag as string;
      assert.match(etag, /^"[0-9a-f]{64}"$/);
      // Every spelling of the digest names the same document.
      const hex = answer.digest.slice(7);
      for (const spelling of [answer.digest, answer.digest.toUpperCase(), `sha256%3A${hex}`]) {
        const same = await get(spelling);
        assert.equal(same.statusCode, 200, spelling);
        assert.equal(same.body, read.body);
      }
      const cached = await get(answer.digest.slice(7), { "if-none-match": etag });
      assert.equal(cached.statusCode, 304);
      assert.equal(cached.body, "");
    });

    test("GET of an unknown digest is 404 notarization_not_found; a bad one 400", async () => {
      const missing = await get("cd".repeat(32));
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json<{ error: string }>().error, "notarization_not_found");
      for (const bad of ["abc", `sha256:${"g".repeat(64)}`, "ab".repeat(33), `md5:${HEX}`]) {
        const response = await get(bad);
        assert.equal(response.statusCode, 400, bad);
        assert.equal(response.json<{ error: string }>().error, "invalid_digest");
      }
    });

    test("every refusal code over HTTP", async () => {
      await refused("{nope", "invalid_json");
      await refused('{"context_digest": "a", "context_digest": "b"}', "invalid_json");
      const unknown = await refused(
        { context_digest: HEX, zeta: 1, alpha: 2 },
        "unsupported_fields",
      );
      assert.deepEqual(unknown.fields, ["zeta", "alpha"]);
      await refused({ action: "x" }, "missing_required_digest");
      await refused({ context_digest: null }, "missing_required_digest");
      await refused({ context_digest: "sha256:1234" }, "invalid_context_digest");
      await refused({ prompt_hash: `sha1:${HEX}` }, "invalid_prompt_hash");
      await refused({ context_digest: HEX, model: 5 }, "invalid_field");
      await refused([HEX], "invalid_field");
      await refused({ context_digest: HEX, metadata: [] }, "invalid_metadata");
      const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i]));
      await refused({ context_digest: HEX, metadata: seventeen }, "invalid_metadata");
      await refused({ context_digest: HEX, metadata: { ké: 1 } }, "invalid_metadata_key");
      await refused({ context_digest: HEX, metadata: { k: 1.5 } }, "invalid_metadata_value");
      await refused({ context_digest: HEX, metadata: { k: 2 ** 53 } }, "invalid_metadata_value");
      await refused(
        `{"context_digest": "${HEX}", "action": "\\ud800"}`,
        "invalid_canonical_statement",
      );
    });

    test("the action length boundary: 120 characters signed, 121 refused", async () => {
      clock.now += 1000;
      const ok = await post({ prompt_hash: HEX, action: "😀".repeat(120) });
      assert.equal(ok.statusCode, 200, ok.body);
      const body = await refused({ prompt_hash: HEX, action: "a".repeat(121) }, "invalid_field");
      assert.equal(body.field, "action");
    });

    test("a body above the notarize limit is 413 body_too_large", async () => {
      const response = await post({ context_digest: HEX, action: "a".repeat(40 * 1024) });
      assert.equal(response.statusCode, 413, response.body);
      assert.equal(response.json<{ error: string }>().error, "body_too_large");
    });

    test("an Idempotency-Key retry returns the same statement, charged once", async () => {
      const { key } = await service.app.accessServices.keys.create({
        name: `notarize-idempotency-${mode.name}`,
        dailyCap: 100,
      });
      const headers = { "x-svc-key": key, "idempotency-key": `notarize-${mode.name}-retry-0001` };
      const payload = { context_digest: HEX, agent_id: "agent-1" };
      clock.now += 1000;
      const first = await post(payload, headers);
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(first.headers["x-ratelimit-remaining"], "99");
      // A later second: without the key this would be a new statement.
      clock.now += 5000;
      const retry = await post(payload, headers);
      assert.equal(retry.statusCode, 200, retry.body);
      assert.equal(retry.json<Notarized>().digest, first.json<Notarized>().digest);
      assert.equal(retry.body, first.body);
      assert.equal(retry.headers["x-ratelimit-remaining"], "99");
      const other = await post({ ...payload, agent_id: "agent-2" }, headers);
      assert.equal(other.statusCode, 422, other.body);
      assert.equal(other.json<{ error: string }>().error, "idempotency_key_reused");
      const fresh = await post(payload, { "x-svc-key": key });
      assert.notEqual(fresh.json<Notarized>().digest, first.json<Notarized>().digest);
    });

    test("POST without a key is 401; the reads are keyless", async () => {
      const anonymous = await startTestService(mode.overrides(), { anonymous: true });
      try {
        const refusedPost = await anonymous.app.inject({
          method: "POST",
          url: "/notarize",
          headers: { "content-type": "application/json" },
          payload: JSON.stringify({ context_digest: HEX }),
        });
        assert.equal(refusedPost.statusCode, 401, refusedPost.body);
        const described = await anonymous.app.inject({ method: "GET", url: "/notarize" });
        assert.equal(described.statusCode, 200, described.body);
        const missing = await anonymous.app.inject({ method: "GET", url: `/notarize/${HEX}` });
        assert.equal(missing.statusCode, 404);
      } finally {
        await anonymous.close();
      }
    });

    test("a store that cannot be reached is 503 store_unavailable with Retry-After", async () => {
      const store = service.app.documentStore;
      const { create, get: read } = store;
      const down = async (): Promise<never> => {
        throw new DocumentStoreUnavailableError("the test took the store down");
      };
      store.create = down;
      store.get = down;
      try {
        for (const response of [await post({ context_digest: HEX }), await get(HEX)]) {
          assert.equal(response.statusCode, 503, response.body);
          assert.equal(response.json<{ error: string }>().error, "store_unavailable");
          assert.equal(response.headers["retry-after"], "1");
        }
      } finally {
        store.create = create;
        store.get = read;
      }
    });

    test("/info lists the endpoints, the notarization store and the body limit", async () => {
      const response = await service.app.inject({ method: "GET", url: "/info" });
      assert.equal(response.statusCode, 200, response.body);
      const info = response.json<{
        endpoints: Record<string, string>;
        notarization: { spec: string };
        limits: { max_notarize_body_bytes: number };
        privacy: { persistent_data: Record<string, string> };
      }>();
      for (const name of ["POST /notarize", "GET /notarize/{digest}", "GET /notarize"]) {
        assert.ok(info.endpoints[name], `${name} is listed`);
      }
      assert.equal(info.notarization.spec, "wm.context-notarization/1.0");
      assert.equal(info.limits.max_notarize_body_bytes, 32 * 1024);
      assert.match(info.privacy.persistent_data.notarizations ?? "", /wm.context-notarization/);
    });

    test("GET /notarize describes the spec, the key, the fields and their limits", async () => {
      const response = await service.app.inject({ method: "GET", url: "/notarize" });
      assert.equal(response.statusCode, 200, response.body);
      const info = response.json<{
        spec: string;
        issuer: string;
        lookup_url: string;
        request: { fields: string[]; rules: Record<string, string>; max_body_bytes: number };
      }>();
      assert.equal(info.spec, "wm.context-notarization/1.0");
      assert.equal(info.issuer, service.app.serviceIdentity.signer().did);
      assert.deepEqual(info.request.fields, [
        "context_digest",
        "prompt_hash",
        "action",
        "model",
        "agent_id",
        "metadata",
      ]);
      assert.match(info.request.rules.action ?? "", /120 characters/);
      assert.equal(info.request.max_body_bytes, 32 * 1024);
      assert.equal(info.lookup_url, "/notarize/<hex of the digest>");
    });
  });
}

for (const distributed of [false, true]) {
  describe(`notarization quota (${distributed ? "distributed" : "embedded"})`, () => {
    const quotaSchema = privateSchema();
    let service: TestService;
    let tick = T0;
    before(async () => {
      service = await startTestService(
        {
          limits: { notarizationPrincipalQuotaBytes: 4096 },
          ...(distributed
            ? {
                redisUrl: SHARED_REDIS_URL,
                redisPrefix: randomPrefix(),
                databaseUrl: DATABASE_URL,
                databaseSchema: quotaSchema,
              }
            : {}),
        },
        { clock: () => tick },
      );
    });
    after(async () => {
      await service.close();
      if (distributed) await dropSchema(quotaSchema);
    });

    test("past the key's quota: 403 notarization_quota_exceeded, nothing stored", async () => {
      const quota = (await service.app.inject({ method: "GET", url: "/info" })).json<{
        notarization: { quotas: Record<string, number> };
      }>().notarization.quotas;
      assert.equal(quota.quota_bytes_per_key, 4096);
      assert.equal(quota.ttl_days, 365);
      let stored = 0;
      for (let attempt = 0; attempt < 20; attempt += 1) {
        tick += 1000;
        const answer = await service.app.inject({
          method: "POST",
          url: "/notarize",
          headers: { "content-type": "application/json", ...service.authHeaders },
          payload: JSON.stringify({ context_digest: HEX, action: `attempt ${attempt}` }),
        });
        if (answer.statusCode === 200) {
          stored += 1;
          continue;
        }
        assert.equal(answer.statusCode, 403, answer.body);
        const body = answer.json<{ error: string; limit: number; held: number; detail: string }>();
        assert.equal(body.error, "notarization_quota_exceeded");
        assert.equal(body.limit, 4096);
        assert.ok(body.held <= 4096 && body.held > 0);
        assert.match(body.detail, /this principal holds/);
        break;
      }
      assert.ok(stored >= 1 && stored < 20, `stored ${stored}`);
      const kept = await service.app.documentStore.list("notarizations", "sha256:");
      assert.equal(kept.length, stored);
    });
  });
}

describe("POST /notarize with x402 on", () => {
  test("a call without a key is offered a payment, like POST /anchors", async () => {
    const service = await startTestService(
      {
        payments: {
          settings: testSettings(),
          facilitatorUrl: null,
          publicBaseUrl: "https://receiptd.example",
        },
      },
      { anonymous: true },
    );
    try {
      const response = await service.app.inject({
        method: "POST",
        url: "/notarize",
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({ context_digest: HEX }),
      });
      assert.equal(response.statusCode, 402, response.body);
      assert.equal(response.json<{ error: string }>().error, "payment_required");
      assert.ok(response.headers["payment-required"], "the x402 v2 challenge is sent");
      const anchors = await service.app.inject({
        method: "POST",
        url: "/anchors",
        headers: { "content-type": "application/json" },
        payload: "{}",
      });
      assert.equal(anchors.statusCode, 402);
    } finally {
      await service.close();
    }
  });
});

describe("notarizations and key rotation", () => {
  test("a statement POSTed before rotate-key still verifies with the CLI after it", async () => {
    let now = T0;
    const service = await startTestService({}, { clock: () => now });
    const dataDir = service.config.dataDir;
    try {
      const response = await service.app.inject({
        method: "POST",
        url: "/notarize",
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({ context_digest: HEX }),
      });
      assert.equal(response.statusCode, 200, response.body);
      const answer = response.json<Notarized>();
      await service.app.close();

      const store = new FsDocumentStore(dataDir);
      let rotated: string;
      try {
        const rotation = await rotateServiceKey(dataDir, store, {
          now: () => now,
          sleep: async (ms) => {
            now += ms;
          },
        });
        rotated = rotation.issuer;
        const stored = await store.get("notarizations", answer.digest);
        assert.ok(stored !== null, "the statement is stored under its digest");
      } finally {
        await store.close();
      }
      assert.notEqual(rotated, answer.receipt.issuer);

      const file = join(dataDir, "answer.json");
      await writeFile(file, response.body);
      let stdout = "";
      const code = await notarizationCli(
        ["verify", file, "--expect-digest", answer.digest.slice(7)],
        { stdout: (text) => (stdout += text), stderr: () => {} },
        { DATA_DIR: dataDir },
      );
      assert.equal(code, 0, stdout);
      assert.equal(JSON.parse(stdout).valid, true);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
