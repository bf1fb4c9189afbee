/** The service's common behaviour (service.md §0, §11): metadata, 404, request ids, faults. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ed25519Summary } from "../../src/service/ed25519-summary.js";
import { SUPPORTED_SPECS } from "../../src/verifier/bundle/record-types.js";
import { VERDICTS } from "../../src/verifier/bundle/result.js";
import { nodeCrypto } from "../../src/verifier/crypto/node.js";
import { setVerifierCrypto, verifierCrypto } from "../../src/verifier/crypto/provider.js";
import { VERIFIER_VERSION } from "../../src/verifier/version.js";
import { corpusBytes } from "../support/corpus.js";
import { fixtureTaskModule, startTestService, type TestService } from "./support/service.js";

const JSON_TYPE = "application/json; charset=utf-8";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("service basics", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  test("GET /health", async () => {
    const response = await service.app.inject({ method: "GET", url: "/health" });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["content-type"], JSON_TYPE);
    assert.equal(response.body, '{"ok":true}');
  });

  test("GET /info describes the service and names the receipt issuer", async () => {
    const response = await service.app.inject({ method: "GET", url: "/info" });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["content-type"], JSON_TYPE);
    const info = response.json();
    assert.equal(info.service, "continuity-receipt-verify");
    assert.equal(info.implementation, "receiptd");
    assert.equal(info.verifier_version, VERIFIER_VERSION);
    assert.deepEqual(info.spec_versions, SUPPORTED_SPECS);
    assert.deepEqual(info.verdicts, VERDICTS);
    assert.equal(info.limits.max_body_bytes, 1_048_576);
    assert.equal(info.limits.max_batch, 50);
    assert.equal(info.issuer, service.app.serviceIdentity.signer().did);
    assert.match(info.issuer, /^did:key:z6Mk/);
    assert.deepEqual(info.crypto, { ed25519: "libsodium" });
  });

  test("unknown paths → 404 not_found, linking /openapi.json", async () => {
    for (const [method, url] of [
      ["GET", "/nothing-here?x=1"],
      ["POST", "/nothing-here"],
      ["GET", "/verify/more"],
    ] as const) {
      const response = await service.app.inject({ method, url });
      assert.equal(response.statusCode, 404, `${method} ${url}`);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      assert.deepEqual(response.json(), {
        error: "not_found",
        detail: "no route has this path; every path and method is listed in /openapi.json",
        docs: "/openapi.json",
      });
    }
    // Close to a known path: named (test/service/http/request-form.test.ts says more).
    const typo = await service.app.inject({ method: "GET", url: "/helth" });
    assert.equal(typo.statusCode, 404);
    assert.equal(typo.json().did_you_mean, "/health");
  });

  test("a route that finds nothing → the plain 404 not_found", async () => {
    // The path is a route's, the method too: the route itself found nothing.
    const response = await service.app.inject({ method: "GET", url: "/assets/no-such-asset.js" });
    assert.equal(response.statusCode, 404);
    assert.equal(response.headers["content-type"], JSON_TYPE);
    assert.deepEqual(response.json(), { error: "not_found" });
  });

  test("a known path asked with another method → 405 method_not_allowed with Allow", async () => {
    for (const [method, url, allow] of [
      ["GET", "/verify?receipt=1", "POST"],
      ["PUT", "/verify", "POST"],
      ["POST", "/health", "GET, HEAD"],
      ["DELETE", `/anchors/sha256:${"0".repeat(64)}`, "GET, HEAD"],
    ] as const) {
      const response = await service.app.inject({ method, url });
      assert.equal(response.statusCode, 405, `${method} ${url}`);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      assert.equal(response.headers.allow, allow, `${method} ${url}`);
      assert.deepEqual(response.json(), {
        error: "method_not_allowed",
        detail: `${method} is not offered here; this path answers ${allow}`,
      });
    }
  });

  test("a URL that cannot be decoded → 400 bad_request", async () => {
    const response = await service.app.inject({ method: "GET", url: "/health%" });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { error: "bad_request" });
    assert.match(String(response.headers["x-request-id"]), UUID);
  });

  test("every response carries its own X-Request-Id", async () => {
    const responses = await Promise.all([
      service.app.inject({ method: "GET", url: "/health" }),
      service.app.inject({ method: "GET", url: "/info" }),
      service.app.inject({ method: "GET", url: "/missing" }),
      service.app.inject({
        method: "POST",
        url: "/verify",
        payload: corpusBytes("vectors/01_happy_minimal.json"),
      }),
      service.app.inject({ method: "POST", url: "/verify", payload: "{" }),
      service.app.inject({ method: "POST", url: "/verify", payload: "[]" }),
    ]);
    const ids = responses.map((response) => String(response.headers["x-request-id"]));
    for (const id of ids) assert.match(id, UUID);
    assert.equal(new Set(ids).size, ids.length);
  });

  test("a client-supplied X-Request-Id is not adopted", async () => {
    const response = await service.app.inject({
      method: "GET",
      url: "/health",
      headers: { "x-request-id": "client-chosen" },
    });
    assert.match(String(response.headers["x-request-id"]), UUID);
  });
});

describe("an unexpected fault", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({
      cpuPool: { taskModules: { verify: fixtureTaskModule("failing-verify-worker") } },
    });
  });
  after(() => service.close());

  test("→ 500 internal_error with the request id and nothing else", async () => {
    const response = await service.app.inject({ method: "POST", url: "/verify", payload: "{}" });
    assert.equal(response.statusCode, 500);
    assert.equal(response.headers["content-type"], JSON_TYPE);
    const requestId = response.headers["x-request-id"];
    assert.match(String(requestId), UUID);
    assert.deepEqual(response.json(), { error: "internal_error", request_id: requestId });
  });
});

describe("route access classes", () => {
  test("a route that declares no access class cannot be registered", async () => {
    const service = await startTestService();
    try {
      assert.throws(
        () => service.app.get("/undeclared", async () => ({})),
        /route GET \/undeclared declares no access class/,
      );
    } finally {
      await service.close();
    }
  });
});

describe("a service on OpenSSL, as where sodium-native cannot load", () => {
  let service: TestService;
  const previous = verifierCrypto();
  before(async () => {
    setVerifierCrypto(nodeCrypto);
    service = await startTestService();
  });
  after(async () => {
    await service.close();
    setVerifierCrypto(previous);
  });

  test("the startup line says OpenSSL and why", () => {
    assert.equal(
      ed25519Summary("openssl", "sodium-native did not load: No native build was found"),
      "openssl: sodium-native did not load: No native build was found",
    );
    assert.equal(ed25519Summary("openssl", null), "openssl");
    assert.equal(ed25519Summary("libsodium", null), "libsodium");
  });

  test("/info and the metrics name OpenSSL, and the worker threads verify with it", async () => {
    const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
    assert.deepEqual(info.crypto, { ed25519: "openssl" });
    assert.match(
      await service.app.metrics.render(),
      /^receiptd_crypto_provider_info\{provider="openssl"\} 1$/m,
    );
    // The threads were told "openssl": a thread that could not follow would fail the task.
    const verified = await service.app.inject({
      method: "POST",
      url: "/verify",
      payload: corpusBytes("vectors/01_happy_minimal.json"),
    });
    assert.equal(verified.statusCode, 200);
    assert.equal(verified.json().verdict, "TRUSTED");
  });
});
