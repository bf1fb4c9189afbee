/**
 * Settlement receipts over HTTP (service.md §4): `POST /payment-receipts` (loopback + internal
 * token, through the settlements queue) and `GET /receipts/{tx}`.
 */
import assert from "node:assert/strict";
import { createHash, createPublicKey, verify } from "node:crypto";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import Fastify, { type FastifyInstance } from "fastify";
import { JobFailedError, type SubmitOutcome } from "../../../../queues/job-queue.js";
import type { SettlementStored, SettlementsQueue } from "../../../../queues/settlements.js";
import type { SettlementReceipt } from "../../../../src/payments/settlement-receipt.js";
import { CpuPool } from "../../../../src/service/cpu-pool.js";
import { paymentReceiptRoutes } from "../../../../src/service/endpoints/settlements/route.js";
import { registerRawBodyParser } from "../../../../src/service/http/body-admission.js";
import { InternalToken, InternalTokenError } from "../../../../src/service/internal-token.js";
import { registerSchemaValidation } from "../../../../src/service/plugins/schemas.js";
import { didKeyToPublicKey } from "../../../../src/verifier/crypto/did-key.js";
import { startTestService, type TestService, temporaryDataDir } from "../../support/service.js";

const JSON_TYPE = "application/json; charset=utf-8";
const RFC3339_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

function txHash(n: number): string {
  return `0x${createHash("sha256").update(`payment receipt ${n}`).digest("hex")}`;
}

function settlement(n: number, extra: Record<string, unknown> = {}) {
  return {
    tx: txHash(n),
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "10000",
    payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    path: "/verify",
    ...extra,
  };
}

interface StoredDocument {
  receipt: SettlementReceipt;
  receipt_digest: string;
  stored_at: string;
}

/** JCS of a receipt (ASCII strings, one small integer): JSON with sorted keys. */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${members.join(",")}}`;
}

/** Checks a stored document offline: the digest, and the signature by the issuer's did:key. */
function assertVerifiesOffline(document: StoredDocument): void {
  const { sig, ...unsigned } = document.receipt;
  const signed = Buffer.from(canonicalJson(unsigned), "utf8");
  assert.equal(
    document.receipt_digest,
    `sha256:${createHash("sha256").update(signed).digest("hex")}`,
  );
  assert.deepEqual(Object.keys(sig), ["alg", "key", "value"]);
  assert.equal(sig.alg, "ed25519");
  assert.equal(sig.key, document.receipt.issuer);
  const key = createPublicKey({
    key: {
      kty: "OKP",
      crv: "Ed25519",
      x: didKeyToPublicKey(document.receipt.issuer).toString("base64url"),
    },
    format: "jwk",
  });
  assert.ok(verify(null, signed, key, Buffer.from(sig.value, "base64url")), "signature");
}

describe("settlement receipts", () => {
  let service: TestService;
  let token: string;
  const post = (
    payload: unknown,
    headers: Record<string, string> = { "x-internal-token": token },
    remoteAddress = "127.0.0.1",
  ) =>
    service.app.inject({
      method: "POST",
      url: "/payment-receipts",
      headers: { "content-type": "application/json", ...headers },
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
      remoteAddress,
    });
  const get = (tx: string, headers: Record<string, string> = {}) =>
    service.app.inject({ method: "GET", url: `/receipts/${tx}`, headers });
  before(async () => {
    service = await startTestService();
    token = await readFile(service.config.internalTokenFile, "utf8");
  });
  after(() => service.close());

  describe("who may post", () => {
    test("a caller off loopback → 403 loopback_only, even with the token", async () => {
      for (const address of ["203.0.113.7", "10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1"]) {
        const response = await post(settlement(1), { "x-internal-token": token }, address);
        assert.equal(response.statusCode, 403, address);
        assert.equal(response.body, '{"error":"loopback_only"}');
      }
    });

    test("X-Forwarded-For does not make a remote caller local", async () => {
      const response = await post(
        settlement(1),
        { "x-internal-token": token, "x-forwarded-for": "127.0.0.1" },
        "198.51.100.4",
      );
      assert.equal(response.statusCode, 403);
      assert.equal(response.body, '{"error":"loopback_only"}');
    });

    test("off loopback without a token is still 403: the address is checked first", async () => {
      const response = await post(settlement(1), {}, "203.0.113.7");
      assert.equal(response.statusCode, 403);
    });

    test("a missing or wrong token → 401 internal_token_required", async () => {
      const wrong: Record<string, string>[] = [
        {},
        { "x-internal-token": "" },
        { "x-internal-token": `${token}0` },
      ];
      wrong.push({ "x-internal-token": token.replace(/.$/, (c) => (c === "0" ? "1" : "0")) });
      wrong.push({ "x-internal-token": token.toUpperCase() });
      for (const headers of wrong) {
        const response = await post(settlement(1), headers);
        assert.equal(response.statusCode, 401, JSON.stringify(headers));
        assert.equal(response.body, '{"error":"internal_token_required"}');
      }
      assert.equal((await get(txHash(1))).statusCode, 404);
    });

    test("::1 and IPv4-mapped loopback callers are local", async () => {
      for (const [n, address] of [
        [2, "::1"],
        [3, "::ffff:127.0.0.1"],
        [4, "127.8.9.10"],
      ] as const) {
        const response = await post(settlement(n), { "x-internal-token": token }, address);
        assert.equal(response.statusCode, 200, `${address}: ${response.body}`);
      }
    });
  });

  describe("POST /payment-receipts", () => {
    test("stores a signed receipt: 200 once durable, then served at /receipts/{tx}", async () => {
      const tx = txHash(10);
      const response = await post(settlement(10, { ua: "curl/8.5.0" }));
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      const answer = response.json<{ receipt: SettlementReceipt; digest: string }>();
      const { receipt, digest } = answer;
      assert.equal(
        response.body,
        JSON.stringify({ stored: true, tx, digest, receipt: answer.receipt }),
      );
      assert.match(receipt.issued_at, RFC3339_SECONDS);
      const issuer = service.app.serviceIdentity.signer().did;
      assert.deepEqual(receipt, {
        kind: "svc.payment-receipt",
        version: 1,
        issued_at: receipt.issued_at,
        network: "eip155:8453",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        amount: "10000",
        pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
        tx,
        path: "/verify",
        ua_family: "curl",
        uah: createHash("sha256").update("curl/8.5.0").digest("hex").slice(0, 12),
        issuer,
        sig: { alg: "ed25519", key: issuer, value: receipt.sig.value },
      });

      const stored = await get(tx);
      assert.equal(stored.statusCode, 200);
      assert.equal(stored.headers["content-type"], JSON_TYPE);
      assert.equal(stored.headers["cache-control"], "public, max-age=300");
      const document = stored.json<StoredDocument>();
      assert.equal(
        stored.body,
        JSON.stringify({ receipt, receipt_digest: digest, stored_at: receipt.issued_at }),
      );
      assertVerifiesOffline(document);
    });

    test("a second call for the same tx answers the first receipt with idempotent: true", async () => {
      const first = await post(settlement(11, { ua: "node" }));
      assert.equal(first.statusCode, 200, first.body);
      const before = await get(txHash(11));
      const second = await post(
        settlement(11, {
          tx: txHash(11).toUpperCase().replace("0X", "0x"),
          ua: "Go-http-client/1.1",
        }),
      );
      assert.equal(second.statusCode, 200, second.body);
      const { receipt, digest } = first.json<{ receipt: SettlementReceipt; digest: string }>();
      assert.equal(
        second.body,
        JSON.stringify({ stored: true, tx: txHash(11), digest, idempotent: true, receipt }),
      );
      const afterwards = await get(txHash(11));
      assert.equal(afterwards.body, before.body);
      assert.equal(afterwards.headers.etag, before.headers.etag);
    });

    test("concurrent posts of the same transactions store one receipt each", async () => {
      const count = 20;
      const answers = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          Promise.all([
            post(settlement(100 + i, { ua: "curl/8" })),
            post(settlement(100 + i, { ua: "python-requests/2" })),
          ]),
        ),
      );
      for (const [a, b] of answers) {
        assert.equal(a.statusCode, 200, a.body);
        assert.equal(b.statusCode, 200, b.body);
        assert.equal(a.json().digest, b.json().digest);
        assert.deepEqual(a.json().receipt, b.json().receipt);
      }
      const stored = await service.app.documentStore.list("settlements");
      const ours = Array.from({ length: count }, (_, i) => txHash(100 + i));
      assert.equal(stored.filter((id) => ours.includes(id)).length, count);
    });

    test("rpc and tool are signed when given; null means absent", async () => {
      const response = await post(
        settlement(12, { path: "/mcp", rpc: "tools/call", tool: "verify_bundle", ua: null }),
      );
      assert.equal(response.statusCode, 200, response.body);
      const document = (await get(txHash(12))).json<StoredDocument>();
      assert.equal(document.receipt.rpc, "tools/call");
      assert.equal(document.receipt.tool, "verify_bundle");
      assert.ok(!("ua_family" in document.receipt) && !("uah" in document.receipt));
      assertVerifiesOffline(document);
    });

    test("bodies are parsed strictly and checked: precise 400s", async () => {
      const cases: [string, string | object, string, RegExp | null][] = [
        ["not JSON", "{", "invalid_json", null],
        ["duplicate member", '{"tx":"a","tx":"b"}', "invalid_json", null],
        ["not an object", "[]", "bad_request", /body must be an object/],
        ["short tx", settlement(13, { tx: "0x1234" }), "invalid_transaction_hash", /tx must be/],
        [
          "tx without 0x",
          settlement(13, { tx: txHash(13).slice(2) }),
          "invalid_transaction_hash",
          null,
        ],
        ["tx not a string", settlement(13, { tx: 5 }), "bad_request", /body\/tx must be string/],
        ["missing amount", { ...settlement(13), amount: undefined }, "bad_request", /'amount'/],
        [
          "numeric amount",
          settlement(13, { amount: 10000 }),
          "bad_request",
          /amount must be string/,
        ],
        ["zero amount", settlement(13, { amount: "0" }), "bad_request", /body\/amount must match/],
        ["query in path", settlement(13, { path: "/verify?k=v" }), "bad_request", /body\/path/],
        ["long asset", settlement(13, { asset: "a".repeat(129) }), "bad_request", /body\/asset/],
        ["bad tool", settlement(13, { tool: "rm -rf" }), "bad_request", /body\/tool/],
        [
          "extra member",
          settlement(13, { pay_to: "x" }),
          "bad_request",
          /unexpected member 'pay_to'/,
        ],
      ];
      for (const [name, payload, error, detail] of cases) {
        const response = await post(payload);
        assert.equal(response.statusCode, 400, `${name}: ${response.body}`);
        const body = response.json<{ error: string; detail: string }>();
        assert.equal(body.error, error, name);
        assert.equal(typeof body.detail, "string", name);
        if (detail !== null) assert.match(body.detail, detail, name);
      }
      assert.equal((await get(txHash(13))).statusCode, 404);
    });
  });

  describe("GET /receipts/{tx}", () => {
    test("200 with a strong ETag; 304 for a matching If-None-Match; hex of either case", async () => {
      assert.equal((await post(settlement(20))).statusCode, 200);
      const tx = txHash(20);
      const response = await get(tx);
      assert.equal(response.statusCode, 200);
      const etag = response.headers.etag as string;
      assert.equal(etag, `"${createHash("sha256").update(response.rawPayload).digest("hex")}"`);
      const upper = await get(`0x${tx.slice(2).toUpperCase()}`);
      assert.equal(upper.statusCode, 200);
      assert.equal(upper.body, response.body);
      const notModified = await get(tx, { "if-none-match": `"other", W/${etag}` });
      assert.equal(notModified.statusCode, 304);
      assert.equal(notModified.body, "");
      assert.equal(notModified.headers.etag, etag);
      assert.equal((await get(tx, { "if-none-match": '"other"' })).statusCode, 200);
    });

    test("a transaction without a receipt → 404 receipt_not_found", async () => {
      const response = await get(txHash(21));
      assert.equal(response.statusCode, 404);
      assert.equal(response.body, '{"error":"receipt_not_found"}');
    });

    test("a malformed transaction hash → 400 invalid_transaction_hash", async () => {
      for (const tx of [
        "x",
        txHash(22).slice(2),
        `${txHash(22)}0`,
        `0X${txHash(22).slice(2)}`,
        `0x${"g".repeat(64)}`,
        "%00",
      ]) {
        const response = await get(tx);
        assert.equal(response.statusCode, 400, tx);
        assert.deepEqual(response.json(), {
          error: "invalid_transaction_hash",
          detail: "tx must be 0x and 64 hex digits",
        });
      }
    });
  });

  test("both operations are in /openapi.json, which stays valid OpenAPI 3.1", async () => {
    const document = (await service.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const validator = new Validator();
    assert.deepEqual(await validator.validate(structuredClone(document)), { valid: true });
    const post = document.paths["/payment-receipts"].post;
    assert.match(post.description, /^Internal:/);
    assert.deepEqual(Object.keys(post.responses).sort(), [
      "200",
      "202",
      "400",
      "401",
      "403",
      "413",
      "415",
      "500",
      "503",
    ]);
    assert.ok(
      post.parameters.some(
        (parameter: { in: string; name: string }) =>
          parameter.in === "header" && parameter.name === "x-internal-token",
      ),
    );
    const get = document.paths["/receipts/{tx}"].get;
    assert.deepEqual(Object.keys(get.responses).sort(), [
      "200",
      "304",
      "400",
      "404",
      "429",
      "500",
      "503",
    ]);
  });

  test("over real HTTP from loopback (the socket's address decides)", async () => {
    await service.app.listen({ host: "127.0.0.1", port: 0 });
    const address = service.app.server.address();
    assert.ok(address !== null && typeof address === "object");
    const url = `http://127.0.0.1:${address.port}`;
    const response = await fetch(`${url}/payment-receipts`, {
      method: "POST",
      headers: { "x-internal-token": token, "user-agent": "ignored/1.0" },
      body: JSON.stringify(settlement(30, { ua: "Wget/1.21" })),
    });
    assert.equal(response.status, 200);
    const { receipt } = (await response.json()) as { receipt: SettlementReceipt };
    // The receipt classifies the paying client named in the body, not the poster.
    assert.equal(receipt.ua_family, "wget");
    const stored = await fetch(`${url}/receipts/${txHash(30)}`);
    assert.equal(stored.status, 200);
    assertVerifiesOffline((await stored.json()) as StoredDocument);
    const refused = await fetch(`${url}/payment-receipts`, {
      method: "POST",
      body: JSON.stringify(settlement(31)),
    });
    assert.equal(refused.status, 401);
    assert.deepEqual(await refused.json(), { error: "internal_token_required" });
  });
});

describe("the internal token file", () => {
  test("is created 0600 with 32 random bytes in hex, and reused across restarts", async () => {
    const dataDir = await temporaryDataDir();
    try {
      const first = await startTestService({ dataDir });
      const path = first.config.internalTokenFile;
      assert.equal(path, join(dataDir, "internal.token"));
      const token = await readFile(path, "utf8");
      assert.match(token, /^[0-9a-f]{64}$/);
      assert.equal((await stat(path)).mode & 0o777, 0o600);
      await first.app.close();

      const second = await startTestService({ dataDir });
      try {
        assert.equal(await readFile(path, "utf8"), token);
        const response = await second.app.inject({
          method: "POST",
          url: "/payment-receipts",
          headers: { "x-internal-token": token },
          payload: JSON.stringify(settlement(40)),
        });
        assert.equal(response.statusCode, 200, response.body);
      } finally {
        await second.app.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test("an operator's own file is used as it is (a final newline is not part of it)", async () => {
    const dataDir = await temporaryDataDir();
    const internalTokenFile = join(dataDir, "operator.token");
    const token = "operator-chosen-token-of-forty-characters";
    await writeFile(internalTokenFile, `${token}\n`, { mode: 0o600 });
    const service = await startTestService({ dataDir, internalTokenFile });
    try {
      const answer = (headers: Record<string, string>) =>
        service.app.inject({
          method: "POST",
          url: "/payment-receipts",
          headers,
          payload: JSON.stringify(settlement(41)),
        });
      assert.equal((await answer({ "x-internal-token": token })).statusCode, 200);
      assert.equal((await answer({ "x-internal-token": `${token}\n` })).statusCode, 401);
      assert.equal(await readFile(internalTokenFile, "utf8"), `${token}\n`);
    } finally {
      await service.close();
    }
  });

  test("a token too short to be a secret stops startup", async () => {
    const dataDir = await temporaryDataDir();
    const internalTokenFile = join(dataDir, "weak.token");
    await writeFile(internalTokenFile, "secret\n", { mode: 0o600 });
    try {
      await assert.rejects(
        startTestService({ dataDir, internalTokenFile }),
        (error: unknown) =>
          error instanceof InternalTokenError && error.message.startsWith(internalTokenFile),
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("POST /payment-receipts when the queue cannot answer in time", () => {
  const token = "t".repeat(40);
  let app: FastifyInstance;
  let pool: CpuPool;
  let answer: () => Promise<SubmitOutcome<SettlementStored>>;
  before(async () => {
    // Just the route, with a queue the test controls: 202 and 503 need a slow or broken store.
    pool = new CpuPool({ threads: 1, maxQueue: 4, workerData: {} });
    app = Fastify();
    registerRawBodyParser(app);
    registerSchemaValidation(app);
    const queue: SettlementsQueue = {
      name: "settlements",
      persistent: false,
      submit: () => answer(),
      close: async () => {},
    };
    app.decorate("cpuPool", pool);
    app.decorate("settlementsQueue", queue);
    app.decorate("internalToken", new InternalToken(token));
    await app.register(paymentReceiptRoutes, { storeWaitMs: 0 });
  });
  after(async () => {
    await app.close();
    await pool.close();
  });
  const post = () =>
    app.inject({
      method: "POST",
      url: "/payment-receipts",
      headers: { "x-internal-token": token },
      payload: JSON.stringify(settlement(50)),
    });

  test("not durable yet → 202 with the receipt's URL to poll", async () => {
    answer = async () => ({ state: "pending", jobId: "settlement-x" });
    const response = await post();
    assert.equal(response.statusCode, 202, response.body);
    const statusUrl = `/receipts/${txHash(50)}`;
    assert.equal(response.headers.location, statusUrl);
    assert.deepEqual(response.json(), { stored: false, tx: txHash(50), status_url: statusUrl });
  });

  test("a failed job → 503 settlement_store_unavailable with Retry-After", async () => {
    answer = async () => {
      throw new JobFailedError("settlements", "settlement-x", "disk full");
    };
    const response = await post();
    assert.equal(response.statusCode, 503);
    assert.equal(response.headers["retry-after"], "1");
    assert.deepEqual(response.json(), {
      error: "settlement_store_unavailable",
      detail: "the receipt could not be stored; nothing is half-stored, retry",
    });
  });
});
