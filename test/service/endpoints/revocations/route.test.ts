/** `GET /revocations/{issuer}` (service.md §3), driven through `app.inject()`. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, beforeEach, describe, test } from "node:test";
import { signerFromSeed } from "../../../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import type { JsonObject, JsonValue } from "../../../../src/verifier/json/value.js";
import {
  buildRevocationDocument,
  MAX_REVOCATION_DOCUMENT_BYTES,
  signRevocationStatement,
} from "../../../../src/verifier/revocations/document.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

/** A third party's document from the corpus, stored under its issuer as is. */
const CORPUS_DOCUMENT = corpusBytes("vectors/verification/12_revoked_issuer.revocations.json");
const CORPUS_ISSUER = "did:key:z6MkfvFqL6qMAgXLopHUAKn1E4Mwf2HLwSrP6eTcu5vnfZZK";

const signer = signerFromSeed(new Uint8Array(32).fill(7));
const otherSigner = signerFromSeed(new Uint8Array(32).fill(8));
const ISSUER = signer.did;

function statementBy(by = signer, revokedAt = "2030-01-01T00:00:00Z"): JsonObject {
  return signRevocationStatement(by, { revokedAt, reason: "test" });
}

function documentOf(...statements: JsonValue[]): Buffer {
  return Buffer.from(dumpCompact(buildRevocationDocument(statements, "2030-01-02T00:00:00Z")));
}

function etagOf(bytes: Uint8Array): string {
  return `"${createHash("sha256").update(bytes).digest("hex")}"`;
}

const STORED_INVALID = { error: "stored_document_invalid" };

describe("GET /revocations/{issuer}", () => {
  let service: TestService;
  const get = (issuer: string, headers: Record<string, string> = {}) =>
    service.app.inject({ method: "GET", url: `/revocations/${issuer}`, headers });

  /** Writes bytes straight into the store, as a faulty disk or a careless operator might. */
  async function store(issuer: string, bytes: Uint8Array | string): Promise<void> {
    const documents = service.app.documentStore;
    const current = await documents.get("revocations", issuer);
    assert.ok(await documents.replace("revocations", issuer, current, Buffer.from(bytes)));
  }

  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());
  beforeEach(async () => {
    await store(CORPUS_ISSUER, CORPUS_DOCUMENT);
    await store(ISSUER, documentOf(statementBy()));
  });

  test("serves the stored bytes with a strong ETag and public caching", async () => {
    const response = await get(CORPUS_ISSUER);
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
    assert.equal(response.headers.etag, etagOf(CORPUS_DOCUMENT));
    assert.equal(response.headers["cache-control"], "public, max-age=300");
    assert.deepEqual(response.rawPayload, CORPUS_DOCUMENT);
  });

  test("accepts the issuer with its colons percent-encoded", async () => {
    const response = await get(encodeURIComponent(CORPUS_ISSUER));
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.rawPayload, CORPUS_DOCUMENT);
  });

  test("answers 304 to a matching If-None-Match: exact, weak, in a list, or *", async () => {
    const etag = etagOf(CORPUS_DOCUMENT);
    for (const ifNoneMatch of [etag, `W/${etag}`, `"nope", W/${etag}`, "*"]) {
      const response = await get(CORPUS_ISSUER, { "if-none-match": ifNoneMatch });
      assert.equal(response.statusCode, 304, ifNoneMatch);
      assert.equal(response.headers.etag, etag);
      assert.equal(response.headers["cache-control"], "public, max-age=300");
      assert.equal(response.body, "");
    }
    const stale = await get(CORPUS_ISSUER, { "if-none-match": '"an-older-version"' });
    assert.equal(stale.statusCode, 200);
    assert.deepEqual(stale.rawPayload, CORPUS_DOCUMENT);
  });

  test("a valid issuer with nothing stored is 404 no_document", async () => {
    const response = await get(otherSigner.did);
    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { error: "no_document" });
  });

  test("an issuer that is not an Ed25519 did:key has no document: 404, as the reference answers", async () => {
    const nothingStored = await get(otherSigner.did);
    for (const issuer of [
      "not-a-did",
      "did:web:example.com",
      "did:key:",
      "did:key:z0OIl",
      "did:key:z1111",
      `${ISSUER}x`,
      ISSUER.toUpperCase(),
      ISSUER.replace("did:key:", "did:KEY:"),
      encodeURIComponent(` ${ISSUER}`),
      encodeURIComponent(`${ISSUER}\n`),
      // Paths that would climb out of the collection, were they ever used as ids.
      encodeURIComponent("../keys/anything"),
      encodeURIComponent(`../../revocations/${ISSUER}`),
      "..%2F..%2F..%2Fetc%2Fpasswd",
      encodeURIComponent("did:key:z6Mk/../../x"),
      // Long issuers too: Fastify's default limit of 100 characters per parameter is lifted.
      `did:web:${"a".repeat(92)}`,
      `did:web:${"a".repeat(93)}`,
      `did:web:${"a".repeat(8000)}`,
    ]) {
      const response = await get(issuer);
      assert.equal(response.statusCode, 404, issuer);
      assert.equal(response.body, nothingStored.body, issuer);
      assert.equal(response.headers["content-type"], nothingStored.headers["content-type"]);
      assert.equal(response.headers["cache-control"], nothingStored.headers["cache-control"]);
    }
    assert.deepEqual(nothingStored.json(), { error: "no_document" });
  });

  test("a document filed under anything but an Ed25519 did:key is never served", async () => {
    const misfiled = "did:web:example.com";
    await store(misfiled, CORPUS_DOCUMENT);
    const response = await get(misfiled);
    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { error: "no_document" });
  });

  describe("a stored document the service cannot vouch for is 500 stored_document_invalid", () => {
    const tampered = statementBy();
    tampered.set("revoked_at", "2031-01-01T00:00:00Z");
    const unsigned = statementBy();
    unsigned.delete("sig");
    const cases: [string, Uint8Array | string][] = [
      ["not JSON", "{"],
      ["not UTF-8", Buffer.from([0x7b, 0xff, 0x7d])],
      [
        "duplicate members",
        '{"kind":"continuity-receipt-revocations","version":1,"version":1,"statements":[]}',
      ],
      ["not an object", "[]"],
      ["a wrong kind", '{"kind":"revocations","version":1,"statements":[]}'],
      ["a wrong version", '{"kind":"continuity-receipt-revocations","version":2,"statements":[]}'],
      [
        "statements not a list",
        '{"kind":"continuity-receipt-revocations","version":1,"statements":{}}',
      ],
      ["a statement that is not an object", documentOf(statementBy(), "revoked")],
      ["a statement whose signature fails", documentOf(statementBy(), tampered)],
      ["an unsigned statement", documentOf(unsigned)],
      ["a statement for another issuer", documentOf(statementBy(), statementBy(otherSigner))],
      [
        "a document over 1 MiB",
        documentOf(statementBy())
          .toString("utf8")
          .padEnd(MAX_REVOCATION_DOCUMENT_BYTES + 1, " "),
      ],
    ];
    for (const [name, bytes] of cases) {
      test(name, async () => {
        await store(ISSUER, bytes);
        const response = await get(ISSUER);
        assert.equal(response.statusCode, 500);
        assert.deepEqual(response.json(), STORED_INVALID);
        assert.equal(response.headers.etag, undefined);
        // Even a client that would take any version gets no 304 for it.
        const conditional = await get(ISSUER, { "if-none-match": "*" });
        assert.equal(conditional.statusCode, 500);
      });
    }
  });

  test("judges the bytes stored now, not those it validated before", async () => {
    const good = documentOf(statementBy());
    assert.equal((await get(ISSUER)).statusCode, 200);

    const forged = statementBy();
    forged.set("reason", "forged");
    await store(ISSUER, documentOf(forged));
    assert.deepEqual((await get(ISSUER)).json(), STORED_INVALID);

    await store(ISSUER, good);
    const restored = await get(ISSUER);
    assert.equal(restored.statusCode, 200);
    assert.equal(restored.headers.etag, etagOf(good));
  });

  test("a document filed under one issuer is not served under another", async () => {
    // The corpus issuer's valid document, stored under our issuer's id.
    await store(ISSUER, CORPUS_DOCUMENT);
    assert.deepEqual((await get(ISSUER)).json(), STORED_INVALID);
  });

  test("an empty document is served: it revokes nothing and claims nothing false", async () => {
    const empty = documentOf();
    await store(ISSUER, empty);
    const response = await get(ISSUER);
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.rawPayload, empty);
  });
});
