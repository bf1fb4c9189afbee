/** `/openapi.json` and `/info` (service.md §11): generated from the routes, valid, complete. */
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { startTestService, type TestService } from "../../support/service.js";

/** Every operation of the contract (service.md §1–§11). */
const CONTRACT_OPERATIONS = [
  "POST /payment-receipts",
  "GET /receipts/{tx}",
  "POST /erc8004/validate",
  "POST /crystals",
  "GET /crystals/{crystal_id}",
  "GET /crystals/lineage",
  "POST /verify",
  "POST /verify-receipt",
  "POST /verify-anchor",
  "POST /anchors",
  "GET /anchors/{digest}",
  "POST /notarize",
  "GET /notarize/{digest}",
  "GET /notarize",
  "GET /revocations/{issuer}",
  "POST /mcp",
  "GET /.well-known/mcp/server-card.json",
  "POST /conformance",
  "GET /health",
  "GET /info",
  "GET /openapi.json",
];

interface Operation {
  description?: string;
  responses?: Record<string, unknown>;
}
type Paths = Record<string, Record<string, Operation>>;

function operationsOf(paths: Paths): Map<string, Operation> {
  const operations = new Map<string, Operation>();
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      operations.set(`${method.toUpperCase()} ${path}`, operation);
    }
  }
  return operations;
}

describe("GET /openapi.json", () => {
  let service: TestService;
  let document: { openapi: string; paths: Paths };
  before(async () => {
    service = await startTestService({ corpusDir: resolve("../shared/corpus") });
    const response = await service.app.inject({ method: "GET", url: "/openapi.json" });
    assert.equal(response.statusCode, 200);
    document = response.json();
  });
  after(() => service.close());

  test("validates as OpenAPI 3.1", async () => {
    assert.equal(document.openapi, "3.1.0");
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    assert.deepEqual(result, { valid: true });
    assert.equal(validator.version, "3.1");
  });

  test("covers every route of the contract, each described with its responses", () => {
    const operations = operationsOf(document.paths);
    for (const name of CONTRACT_OPERATIONS) {
      const operation = operations.get(name);
      assert.ok(operation, `${name} is missing`);
      assert.ok(operation.description, `${name} has no description`);
      assert.ok(Object.keys(operation.responses ?? {}).length > 0, `${name} has no responses`);
    }
  });

  test("every documented operation exists: none answers the router's 404", async () => {
    for (const name of operationsOf(document.paths).keys()) {
      const [method, path] = name.split(" ") as [string, string];
      const url = path.replace(/\{[^}]+\}/g, "x");
      const response = await service.app.inject({
        method: method as "GET" | "POST" | "DELETE",
        url,
        payload: method === "GET" ? undefined : "{}",
      });
      // A resource may be missing (`GET /revocations/x` is 404 no_document); the route may not
      // (a path no route has is the 404 that links /openapi.json).
      assert.ok(!response.body.includes('"docs":"/openapi.json"'), `${name} → ${response.body}`);
    }
  });
});

describe("GET /info", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({ corpusDir: resolve("../shared/corpus") });
  });
  after(() => service.close());

  test("lists exactly the documented operations", async () => {
    const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
    const openapi = (await service.app.inject({ method: "GET", url: "/openapi.json" })).json();
    // CORS preflights (OPTIONS) are documented but are not service endpoints.
    const operations = [...operationsOf(openapi.paths).keys()].filter(
      (name) => !name.startsWith("OPTIONS "),
    );
    assert.deepEqual(Object.keys(info.endpoints).sort(), operations.sort());
    for (const name of CONTRACT_OPERATIONS) assert.ok(info.endpoints[name], name);
  });

  test("reports the deployed corpus with the public referee's manifest digests", async () => {
    const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
    const corpus = info.conformance.corpus;
    assert.equal(corpus.bundles.vectors, 40);
    assert.match(corpus.bundles.manifest_digest, /^sha256:eac2c24d[0-9a-f]{56}$/);
    assert.ok(corpus.bundles.manifest_digest.endsWith("18b3"));
    assert.equal(corpus.verification_receipts.vectors, 21);
    assert.match(corpus.verification_receipts.manifest_digest, /^sha256:e6ecb5b1[0-9a-f]{52}d007$/);
    assert.equal(corpus.hostile_inputs.vectors, 208);
    assert.match(corpus.hostile_inputs.manifest_digest, /^sha256:2a6af64f[0-9a-f]{52}aa03$/);
  });

  test("names the current issuer and the limits", async () => {
    const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
    assert.equal(info.verification_receipt.issuer, service.app.serviceIdentity.signer().did);
    assert.deepEqual(info.limits.digest_cache, {
      opt_in: "?cache=1",
      ttl_s: 900,
      max_entries: 256,
      stores: "verdict payloads only, in memory (Redis when distributed); never on disk",
    });
    assert.equal(info.limits.max_body_bytes, 1_048_576);
    assert.equal(info.limits.max_batch, 50);
    assert.equal(info.payments, null, "payments are off without X402_PAY_TO");
  });

  test("without a corpus the conformance section says so", async () => {
    const bare = await startTestService();
    try {
      const info = (await bare.app.inject({ method: "GET", url: "/info" })).json();
      assert.equal(info.conformance.corpus, null);
    } finally {
      await bare.close();
    }
  });
});
