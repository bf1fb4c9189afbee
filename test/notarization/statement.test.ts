/**
 * The notarization statement (issue 28): issued, signed, digested, stored and checked offline;
 * a tampered statement fails; a statement signed before a key rotation still verifies.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { localTrust } from "../../src/cli/notarization.js";
import {
  issueNotarization,
  NOTARIZATION_KIND,
  NOTARIZATION_NOTE,
  NotarizationError,
  type NotarizationErrorCode,
  notarizationAnswer,
  parseNotarizationRequest,
  readNotarization,
  storeNotarization,
  verifyNotarization,
} from "../../src/notarization/index.js";
import { rotateServiceKey } from "../../src/service/key-rotation.js";
import { loadOrCreateServiceKey } from "../../src/service/service-key.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { sha256Digest } from "../../src/verifier/crypto/digest.js";
import {
  ed25519Signature,
  signerFromSeed,
  verifyEd25519,
} from "../../src/verifier/crypto/ed25519.js";
import { canonicalBytes, canonicalText } from "../../src/verifier/json/canonical.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { isObject, type JsonObject, member } from "../../src/verifier/json/value.js";

const signer = signerFromSeed(new Uint8Array(32).fill(3));
const stranger = signerFromSeed(new Uint8Array(32).fill(4));
const HEX = "5e".repeat(32);
const AT = new Date("2026-11-26T12:00:00.750Z");

function request(text: string) {
  return parseNotarizationRequest(parseJson(text));
}

function issue(text = `{"context_digest":"${HEX.toUpperCase()}","action":"deploy"}`) {
  return issueNotarization(request(text), signer, { now: () => AT });
}

/** A deep copy, to tamper with. */
function copy(statement: JsonObject): JsonObject {
  return parseJson(canonicalText(statement)) as JsonObject;
}

async function codeOf(work: () => unknown): Promise<NotarizationErrorCode> {
  try {
    await work();
  } catch (error) {
    if (error instanceof NotarizationError) return error.code;
    throw error;
  }
  assert.fail("no NotarizationError");
}

describe("issuing a notarization", () => {
  test("the statement: kind, version, issued_at (whole seconds), issuer, the claims, sig", () => {
    const { statement, digest } = issue(
      `{"prompt_hash":"${HEX}","context_digest":"sha256:${HEX}","metadata":{"run":7,"ok":true}}`,
    );
    assert.deepEqual(
      [...statement.keys()],
      [
        "kind",
        "version",
        "issued_at",
        "issuer",
        "context_digest",
        "prompt_hash",
        "metadata",
        "sig",
      ],
    );
    assert.equal(member(statement, "kind"), NOTARIZATION_KIND);
    assert.equal(member(statement, "version"), 1);
    assert.equal(member(statement, "issued_at"), "2026-11-26T12:00:00Z");
    assert.equal(member(statement, "issuer"), signer.did);
    assert.equal(member(statement, "context_digest"), `sha256:${HEX}`);
    const sig = member(statement, "sig") as JsonObject;
    assert.equal(member(sig, "alg"), "ed25519");
    assert.equal(member(sig, "key"), signer.did);
    const signed = canonicalBytes(statement, "sig");
    assert.ok(verifyEd25519(signer.did, signed, member(sig, "value") as string));
    assert.equal(digest, sha256Digest(signed));
  });

  test("the answer names the digest and the lookup path by its hex", () => {
    const issued = issue();
    const answer = notarizationAnswer(issued, "continuity-receipt-verify");
    assert.equal(answer.notarized, true);
    assert.equal(answer.digest, issued.digest);
    assert.equal(answer.receipt, issued.statement);
    assert.equal(answer.lookup_url, `/notarize/${issued.digest.slice(7)}`);
  });

  test("a lone surrogate has no canonical form: invalid_canonical_statement", async () => {
    const lone = request(`{"context_digest":"${HEX}","action":"\\ud800"}`);
    assert.equal(
      await codeOf(() => issueNotarization(lone, signer)),
      "invalid_canonical_statement",
    );
  });

  test("the same request a second later is a new statement with a new digest", () => {
    const first = issue();
    const later = issueNotarization(
      request(`{"context_digest":"${HEX}","action":"deploy"}`),
      signer,
      {
        now: () => new Date(AT.getTime() + 1000),
      },
    );
    assert.notEqual(first.digest, later.digest);
  });
});

describe("verifying a notarization offline", () => {
  const trusted = { trustedIssuers: [signer.did] };

  test("sign → verify round trip, with and without the expected digest", () => {
    const { statement, digest } = issue();
    const plain = verifyNotarization(statement, trusted);
    assert.deepEqual(plain.errors, []);
    assert.equal(plain.valid, true);
    assert.equal(plain.digest, digest);
    const withDigest = verifyNotarization(statement, {
      ...trusted,
      digest: digest.slice(7).toUpperCase(),
    });
    assert.equal(withDigest.valid, true);
    assert.equal(withDigest.digest_match, true);
  });

  test("a statement read back from JSON text verifies", () => {
    const { statement } = issue(
      `{"context_digest":"${HEX}","metadata":{"n":-9007199254740991,"s":"é😀","z":null}}`,
    );
    assert.equal(verifyNotarization(parseJson(canonicalText(statement)), trusted).valid, true);
  });

  test("tampering with any claim breaks the signature and the digest", () => {
    const { statement, digest } = issue();
    for (const [name, value] of [
      ["action", "delete"],
      ["context_digest", `sha256:${"00".repeat(32)}`],
      ["issued_at", "2026-11-26T12:00:01Z"],
    ] as const) {
      const tampered = copy(statement);
      tampered.set(name, value);
      const result = verifyNotarization(tampered, { ...trusted, digest });
      assert.equal(result.valid, false);
      assert.deepEqual(result.errors, ["bad_signature", "digest_mismatch"], name);
    }
  });

  test("a statement re-signed by another key is untrusted, and its sig must name its issuer", () => {
    const forged = issueNotarization(request(`{"context_digest":"${HEX}"}`), stranger);
    assert.deepEqual(verifyNotarization(forged.statement, trusted).errors, ["untrusted_issuer"]);
    const swapped = copy(issue().statement);
    swapped.set("issuer", stranger.did);
    assert.deepEqual(verifyNotarization(swapped, trusted).errors, [
      "bad_signature",
      "untrusted_issuer",
    ]);
  });

  test("shape problems are each reported", () => {
    const { statement } = issue();
    const bad = copy(statement);
    bad.set("kind", "continuity-receipt-verification");
    bad.set("version", 2);
    bad.set("issued_at", "yesterday");
    bad.set("extra", 1);
    bad.delete("sig");
    assert.deepEqual(verifyNotarization(bad, trusted).errors, [
      "bad_kind",
      "bad_version",
      "bad_issued_at",
      "bad_claims",
      "bad_signature_shape",
    ]);
    assert.deepEqual(verifyNotarization([], trusted).errors, ["not_an_object"]);
  });

  test("claims a request could not produce are bad_claims (upper-case digest, 121-char action)", () => {
    for (const [name, value] of [
      ["context_digest", `sha256:${HEX.toUpperCase()}`],
      ["action", "a".repeat(121)],
    ] as const) {
      const unsigned = copy(issue().statement);
      unsigned.set(name, value);
      unsigned.delete("sig");
      // Signed properly, so only the claims are wrong.
      const resigned = new Map(unsigned);
      resigned.set("sig", ed25519Signature(signer, canonicalBytes(unsigned)));
      assert.deepEqual(verifyNotarization(resigned, trusted).errors, ["bad_claims"], name);
    }
  });
});

describe("the notarization store and key rotation (embedded files)", () => {
  let dataDir: string;
  let store: FsDocumentStore;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-notarization-"));
    store = new FsDocumentStore(dataDir);
  });
  after(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test("stored under its digest, idempotently; read back by hex or sha256:<hex>, either case", async () => {
    const issued = issue();
    const first = await storeNotarization(store, issued, "svc", AT);
    assert.equal(first.created, true);
    const again = await storeNotarization(store, issued, "svc", new Date(AT.getTime() + 5000));
    assert.equal(again.created, false);
    assert.deepEqual(Buffer.from(again.stored), Buffer.from(first.stored));
    const hex = issued.digest.slice(7);
    for (const key of [hex, hex.toUpperCase(), issued.digest]) {
      assert.deepEqual(Buffer.from(await readNotarization(store, key)), Buffer.from(first.stored));
    }
    const document = parseJson(await readNotarization(store, hex)) as JsonObject;
    assert.deepEqual(
      [...document.keys()],
      ["notarization", "notarization_digest", "stored_at", "service", "note"],
    );
    assert.equal(member(document, "notarization_digest"), issued.digest);
    assert.equal(member(document, "stored_at"), "2026-11-26T12:00:00Z");
    assert.equal(member(document, "note"), NOTARIZATION_NOTE);
    const stored = member(document, "notarization");
    assert.ok(isObject(stored));
    assert.equal(
      verifyNotarization(stored, { trustedIssuers: [signer.did], digest: issued.digest }).valid,
      true,
    );
  });

  test("reads: invalid_digest before the store, notarization_not_found after", async () => {
    assert.equal(await codeOf(() => readNotarization(store, "../../etc")), "invalid_digest");
    assert.equal(await codeOf(() => readNotarization(store, `sha256:${HEX}0`)), "invalid_digest");
    assert.equal(
      await codeOf(() => readNotarization(store, "0".repeat(64))),
      "notarization_not_found",
    );
  });

  test("a notarization signed before rotate-key still verifies against the data directory", async () => {
    const before = await loadOrCreateServiceKey(dataDir);
    const clock = Date.parse("2026-11-26T12:00:00Z");
    let now = clock;
    const old = issueNotarization(request(`{"prompt_hash":"${HEX}"}`), before, {
      now: () => new Date(now),
    });
    const rotation = await rotateServiceKey(dataDir, store, {
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    });
    assert.equal(rotation.retired.issuer, before.did);
    const trust = await localTrust(dataDir, store);
    assert.deepEqual(trust.issuers.sort(), [before.did, rotation.issuer].sort());
    const options = { trustedIssuers: trust.issuers, revocations: trust.retirements };
    assert.deepEqual(verifyNotarization(old.statement, options).errors, []);

    // The retired key signing after its retirement (a stolen key) is refused.
    const late = issueNotarization(request(`{"prompt_hash":"${HEX}"}`), before, {
      now: () => new Date(now + 60_000),
    });
    assert.deepEqual(verifyNotarization(late.statement, options).errors, ["key_revoked"]);
  });
});

describe("a request's statement is what verification accepts", () => {
  test("every table boundary that is accepted gives a statement that verifies", () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [
        `${"k".repeat(62)}${String(i).padStart(2, "0")}`,
        "v".repeat(256),
      ]),
    );
    const bodies: Record<string, unknown>[] = [
      {
        context_digest: HEX,
        action: "a".repeat(120),
        model: "m".repeat(100),
        agent_id: "g".repeat(120),
      },
      { prompt_hash: HEX, metadata },
    ];
    for (const body of bodies) {
      const issued = issueNotarization(request(JSON.stringify(body)), signer);
      assert.equal(issued.statement.size, 4 + Object.keys(body).length + 1);
      assert.deepEqual(
        verifyNotarization(issued.statement, { trustedIssuers: [signer.did] }).errors,
        [],
      );
    }
  });
});
