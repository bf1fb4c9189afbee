import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { verifyBundle } from "../../../src/verifier/bundle/verify-bundle.js";
import {
  type Ed25519Signer,
  signEd25519,
  signerFromSeed,
} from "../../../src/verifier/crypto/ed25519.js";
import { canonicalBytes } from "../../../src/verifier/json/canonical.js";
import { dumpJson } from "../../../src/verifier/json/dump.js";
import { parseJson } from "../../../src/verifier/json/parse.js";
import {
  fromPlain,
  isObject,
  type JsonObject,
  type JsonValue,
  jsonObject,
  member,
  PyFloat,
} from "../../../src/verifier/json/value.js";
import {
  parseRevocationDocument,
  signRevocationStatement,
} from "../../../src/verifier/revocations/document.js";
import {
  bundleDigest,
  issueVerificationReceipt,
  type ReceiptCheck,
  VerificationReceiptIssueError,
  verificationReceiptDigest,
  verifyVerificationReceipt,
} from "../../../src/verifier/verification-receipt/index.js";
import { VERIFIER_VERSION } from "../../../src/verifier/version.js";

const vectors = new URL("../../../../shared/corpus/vectors/verification/", import.meta.url);
const expectedDir = new URL("../../../../shared/corpus/expected/verification/", import.meta.url);
const vectorBytes = (name: string): Buffer => readFileSync(new URL(name, vectors));
const vector = (name: string): JsonValue => parseJson(vectorBytes(name));

/** Both sides through the same parser and printer, so only content and order can differ. */
function sameJson(actual: unknown, expected: Uint8Array | string): void {
  const normalise = (text: string): string => dumpJson(parseJson(text), { indent: 2 });
  assert.equal(
    normalise(dumpJson(actual, { indent: 2 })),
    normalise(Buffer.from(expected).toString()),
  );
}

interface ManifestEntry {
  file: string;
  expected_valid: boolean;
  expected_errors: string[];
  bundle_file?: string;
  revocations_file?: string;
}

const manifest = JSON.parse(vectorBytes("manifest.json").toString("utf8")) as {
  vectors: ManifestEntry[];
};

const CORPUS_BUNDLE_DIGEST =
  "sha256:0ea854078244673a93249ac2c3df35aff6dfa71602bdc556a2887da2b1a59de9";
const VERIFIED_AT = "2026-09-23T21:00:00Z";

const issuerSigner = signerFromSeed(new Uint8Array(32).fill(7));
const otherSigner = signerFromSeed(new Uint8Array(32).fill(9));

function copy(receipt: JsonObject): JsonObject {
  return fromPlain(receipt) as JsonObject;
}

/** Replaces `sig` with a fresh signature by `signer`, for receipts altered on purpose. */
function resign(receipt: JsonObject, signer: Ed25519Signer): JsonObject {
  const signed = copy(receipt);
  signed.set(
    "sig",
    jsonObject({
      alg: "ed25519",
      key: signer.did,
      value: signEd25519(signer, canonicalBytes(signed, "sig")),
    }),
  );
  return signed;
}

function corpusBundle(): JsonValue {
  return vector("bundle.json");
}

function freshReceipt(): JsonObject {
  const bundle = corpusBundle();
  return issueVerificationReceipt(bundle, verifyBundle(bundle), issuerSigner, {
    verifiedAt: VERIFIED_AT,
  });
}

describe("corpus vectors (vectors/verification/manifest.json)", () => {
  test("the manifest has 21 vectors", () => {
    assert.equal(manifest.vectors.length, 21);
  });

  for (const entry of manifest.vectors) {
    test(entry.file, () => {
      const { bundle_file, revocations_file } = entry;
      const result = verifyVerificationReceipt(vector(entry.file), {
        bundle: bundle_file === undefined ? undefined : vectorBytes(bundle_file),
        revocations:
          revocations_file === undefined
            ? undefined
            : parseRevocationDocument(vectorBytes(revocations_file)),
      });
      sameJson(result, readFileSync(new URL(entry.file, expectedDir)));
      assert.equal(result.valid, entry.expected_valid);
      // Sorted on both sides: the manifest is not sorted everywhere (06 lists bad_version first).
      assert.deepEqual([...result.errors].sort(), [...entry.expected_errors].sort());
    });
  }

  test("the receipt digest of 01_valid", () => {
    const receipt = vector("01_valid.json");
    assert.ok(isObject(receipt));
    assert.equal(
      verificationReceiptDigest(receipt),
      "sha256:f0c7de6ac268de40a5f08deb209a9d8bc92d921b465b6ab0dc812c193a44bb9e",
    );
  });

  test("the bundle digests the vectors were made for", () => {
    assert.equal(bundleDigest(corpusBundle()), CORPUS_BUNDLE_DIGEST);
    assert.equal(
      bundleDigest(vectorBytes("erased_bundle.json")),
      "sha256:9410c4707a3c305e9b42ef4e41bc8ec5dd08f5d0703bd5ca147ca291bcc3c8ea",
    );
  });
});

test("VERIFIER_VERSION is the package version", () => {
  const pkg = JSON.parse(
    readFileSync(new URL("../../../package.json", import.meta.url), "utf8"),
  ) as {
    version: string;
  };
  assert.equal(VERIFIER_VERSION, pkg.version);
});

describe("issuance", () => {
  test("issue → verify round trip on the corpus bundle", () => {
    const receipt = freshReceipt();
    const check = verifyVerificationReceipt(receipt, { bundle: corpusBundle() });
    assert.deepEqual(check, {
      valid: true,
      errors: [],
      issuer: issuerSigner.did,
      verdict: "TRUSTED",
      verified_at: VERIFIED_AT,
      bundle_digest: CORPUS_BUNDLE_DIGEST,
      digest_match: true,
    } satisfies ReceiptCheck);
  });

  test("members come in the reference's order, with the defaults filled in", () => {
    const receipt = issueVerificationReceipt(
      corpusBundle(),
      verifyBundle(corpusBundle()),
      issuerSigner,
    );
    assert.deepEqual(
      [...receipt.keys()],
      [
        "kind",
        "version",
        "bundle_digest",
        "verdict",
        "error_codes",
        "errors",
        "provisional_reasons",
        "insufficient_reasons",
        "summary",
        "verified_at",
        "verifier",
        "issuer",
        "sig",
      ],
    );
    assert.match(String(member(receipt, "verified_at")), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    sameJson(
      member(receipt, "verifier"),
      JSON.stringify({ implementation: "receiptd", version: VERIFIER_VERSION }),
    );
    const sig = member(receipt, "sig");
    assert.ok(isObject(sig));
    assert.deepEqual([...sig.keys()], ["alg", "key", "value"]);
    assert.equal(member(sig, "key"), issuerSigner.did);
    assert.equal(member(receipt, "issuer"), issuerSigner.did);
  });

  test("options set the verifier and verified_at", () => {
    const receipt = issueVerificationReceipt(
      corpusBundle(),
      verifyBundle(corpusBundle()),
      issuerSigner,
      {
        implementation: "python-reference",
        version: "0.5.0",
        verifiedAt: "2026-01-02T03:04:05.678Z",
      },
    );
    sameJson(
      member(receipt, "verifier"),
      JSON.stringify({ implementation: "python-reference", version: "0.5.0" }),
    );
    assert.equal(member(receipt, "verified_at"), "2026-01-02T03:04:05.678Z");
  });

  test("the result's dict form, and the bundle as bytes or text, give the same receipt", () => {
    const result = verifyBundle(corpusBundle());
    const dictForm = jsonObject({
      verdict: result.verdict,
      errors: [],
      provisional_reasons: [],
      insufficient_reasons: [],
      summary: result.summary,
    });
    const expected = dumpJson(freshReceipt());
    const options = { verifiedAt: VERIFIED_AT };
    for (const bundle of [vectorBytes("bundle.json"), vectorBytes("bundle.json").toString()]) {
      assert.equal(
        dumpJson(issueVerificationReceipt(bundle, dictForm, issuerSigner, options)),
        expected,
      );
    }
  });

  test("an UNTRUSTED result keeps every error entry and its code order", () => {
    const bundle = parseJson('{"spec":"continuity-receipt/0.4","receipts":[]}');
    const result = verifyBundle(bundle);
    assert.equal(result.verdict, "UNTRUSTED");
    const receipt = issueVerificationReceipt(bundle, result, issuerSigner);
    assert.deepEqual(
      member(receipt, "error_codes"),
      result.errors.map((error) => error.code),
    );
    sameJson(member(receipt, "errors"), dumpJson(result.errors));
    assert.equal(verifyVerificationReceipt(receipt, { bundle }).valid, true);
  });

  test("what was signed does not change when the caller's result does", () => {
    const result = verifyBundle(corpusBundle());
    const receipt = issueVerificationReceipt(corpusBundle(), result, issuerSigner);
    result.summary.set("receipts", 99);
    result.provisional_reasons.push("anchor_missing");
    assert.equal(verifyVerificationReceipt(receipt).valid, true);
  });

  const validDict = (): JsonObject =>
    jsonObject({
      verdict: "TRUSTED",
      errors: [],
      provisional_reasons: [],
      insufficient_reasons: [],
      summary: jsonObject({}),
    });
  const refusals: [string, (dict: JsonObject) => JsonValue, RegExp][] = [
    ["a result that is not an object", () => [], /not an object/],
    ["a verdict outside the enum", (d) => d.set("verdict", "MAYBE"), /verdict must be one of/],
    ["a verdict that is not a string", (d) => d.set("verdict", null), /verdict must be one of/],
    ["errors that are not a list", (d) => d.set("errors", jsonObject({})), /errors must be a list/],
    [
      "an error entry without a string code",
      (d) => d.set("errors", [jsonObject({ code: 1 })]).set("verdict", "UNTRUSTED"),
      /errors must be a list/,
    ],
    ["an error entry that is not an object", (d) => d.set("errors", ["malformed"]), /errors must/],
    [
      "provisional reasons that are not strings",
      (d) => d.set("provisional_reasons", [1]),
      /provisional_reasons must be a list of strings/,
    ],
    [
      "insufficient reasons that are not a list",
      (d) => d.set("insufficient_reasons", "erased_content:x"),
      /insufficient_reasons must be a list of strings/,
    ],
    [
      "a verdict the lists contradict",
      (d) => d.set("errors", [jsonObject({ code: "malformed" })]),
      /verdict TRUSTED contradicts its lists, which imply UNTRUSTED/,
    ],
    [
      "PROVISIONAL with an insufficient reason",
      (d) => d.set("verdict", "PROVISIONAL").set("insufficient_reasons", ["erased_content:x"]),
      /imply INSUFFICIENT_EVIDENCE/,
    ],
    ["a summary that is not an object", (d) => d.set("summary", []), /summary must be an object/],
    [
      "a result holding a float",
      (d) => d.set("summary", jsonObject({ ratio: new PyFloat(0.5) })),
      /result cannot be canonicalised: floats are not allowed/,
    ],
  ];
  for (const [name, mutate, message] of refusals) {
    test(`refuses ${name}`, () => {
      const result = mutate(validDict());
      assert.throws(
        () => issueVerificationReceipt(corpusBundle(), result, issuerSigner),
        (error: unknown) =>
          error instanceof VerificationReceiptIssueError && message.test(error.message),
      );
    });
  }

  test("the well-formed dict passes the same checks", () => {
    const receipt = issueVerificationReceipt(corpusBundle(), validDict(), issuerSigner);
    assert.equal(verifyVerificationReceipt(receipt).valid, true);
  });

  test("refuses a verified_at that verification would reject", () => {
    assert.throws(
      () =>
        issueVerificationReceipt(corpusBundle(), validDict(), issuerSigner, {
          verifiedAt: "2026-09-23 21:00:00Z",
        }),
      VerificationReceiptIssueError,
    );
  });

  test("a bundle holding a float cannot be issued for", () => {
    const bundle = parseJson('{"spec":"continuity-receipt/0.4","receipts":[],"weight":1.5}');
    assert.throws(
      () => issueVerificationReceipt(bundle, validDict(), issuerSigner),
      (error: unknown) =>
        error instanceof VerificationReceiptIssueError &&
        /bundle cannot be canonicalised: floats are not allowed/.test(error.message),
    );
  });

  test("bundle bytes or text that are not strict JSON are refused", () => {
    for (const bundle of [
      Buffer.from('{"a":1,"a":2}'),
      "\ufeff{}",
      Buffer.from([0x7b, 0xff, 0x7d]),
    ]) {
      assert.throws(
        () => issueVerificationReceipt(bundle, validDict(), issuerSigner),
        (error: unknown) =>
          error instanceof VerificationReceiptIssueError &&
          /bundle is not valid JSON/.test(error.message),
      );
    }
  });
});

describe("verification", () => {
  const tamperings: [string, (receipt: JsonObject) => void, string[]][] = [
    [
      "kind",
      (r) => r.set("kind", "continuity-receipt-verification-x"),
      ["bad_kind", "bad_signature"],
    ],
    ["version", (r) => r.set("version", 2), ["bad_version", "bad_signature"]],
    [
      "bundle_digest",
      (r) => r.set("bundle_digest", `sha256:${"0".repeat(64)}`),
      ["bad_signature", "bundle_digest_mismatch"],
    ],
    ["verdict", (r) => r.set("verdict", "UNTRUSTED"), ["verdict_mismatch", "bad_signature"]],
    [
      "error_codes",
      (r) => r.set("error_codes", ["malformed"]),
      ["error_codes_mismatch", "bad_signature"],
    ],
    [
      "errors",
      (r) => r.set("errors", [jsonObject({ code: "malformed", detail: "x", receipt_id: null })]),
      ["error_codes_mismatch", "verdict_mismatch", "bad_signature"],
    ],
    [
      "provisional_reasons",
      (r) => r.set("provisional_reasons", ["anchor_missing"]),
      ["verdict_mismatch", "bad_signature"],
    ],
    [
      "insufficient_reasons",
      (r) => r.set("insufficient_reasons", ["erased_content:x"]),
      ["verdict_mismatch", "bad_signature"],
    ],
    ["summary", (r) => (member(r, "summary") as JsonObject).set("receipts", 5), ["bad_signature"]],
    ["verified_at", (r) => r.set("verified_at", "2026-09-23T21:00:01Z"), ["bad_signature"]],
    [
      "verifier",
      (r) => (member(r, "verifier") as JsonObject).set("implementation", "other"),
      ["bad_signature"],
    ],
    ["issuer", (r) => r.set("issuer", otherSigner.did), ["bad_signature"]],
    ["an added member", (r) => r.set("note", "hello"), ["bad_signature"]],
    ["a removed member", (r) => r.delete("verifier"), ["bad_signature"]],
    [
      "sig.value",
      (r) => {
        const sig = member(r, "sig") as JsonObject;
        const value = String(member(sig, "value"));
        sig.set("value", (value[0] === "A" ? "B" : "A") + value.slice(1));
      },
      ["bad_signature"],
    ],
    [
      "sig.key",
      (r) => (member(r, "sig") as JsonObject).set("key", otherSigner.did),
      ["bad_signature"],
    ],
    [
      "sig.alg",
      (r) => (member(r, "sig") as JsonObject).set("alg", "Ed25519"),
      ["bad_signature_shape"],
    ],
    [
      "sig.value emptied",
      (r) => (member(r, "sig") as JsonObject).set("value", ""),
      ["bad_signature_shape"],
    ],
    ["sig removed", (r) => r.delete("sig"), ["bad_signature_shape"]],
  ];
  for (const [name, tamper, errors] of tamperings) {
    test(`tampering with ${name} invalidates the receipt`, () => {
      const receipt = copy(freshReceipt());
      tamper(receipt);
      const check = verifyVerificationReceipt(receipt, { bundle: corpusBundle() });
      assert.equal(check.valid, false);
      assert.deepEqual(check.errors, errors);
    });
  }

  test("a receipt re-signed by another key than its issuer is bad_signature", () => {
    const receipt = resign(freshReceipt(), otherSigner);
    receipt.set("issuer", issuerSigner.did);
    assert.deepEqual(verifyVerificationReceipt(receipt).errors, ["bad_signature"]);
    const consistent = copy(receipt);
    consistent.set("issuer", otherSigner.did);
    assert.deepEqual(verifyVerificationReceipt(consistent).errors, ["bad_signature"]);
    assert.deepEqual(verifyVerificationReceipt(resign(consistent, otherSigner)).errors, []);
  });

  test("version uses Python equality: true and 1.0 pass, '1' does not", () => {
    // 1.0 is equal to 1 but is a float, so a receipt holding it can never be canonicalised
    // for its signature check.
    for (const [version, errors] of [
      [true, []],
      [new PyFloat(1), ["bad_signature"]],
      ["1", ["bad_version"]],
      [null, ["bad_version"]],
    ] as [JsonValue, string[]][]) {
      const receipt = copy(freshReceipt());
      receipt.set("version", version);
      const checked = version instanceof PyFloat ? receipt : resign(receipt, issuerSigner);
      assert.deepEqual(verifyVerificationReceipt(checked).errors, errors);
    }
  });

  test("every shape failure is reported, in the reference's order", () => {
    const receipt = jsonObject({
      kind: 1,
      verdict: "MAYBE",
      verified_at: "2026-09-23T21:00:00",
      bundle_digest: "sha256:ABC",
      errors: [1],
      provisional_reasons: [null],
      insufficient_reasons: "x",
      summary: [],
      error_codes: [1],
      issuer: "",
      sig: jsonObject({ alg: "ed25519", key: "", value: "x" }),
    });
    assert.deepEqual(verifyVerificationReceipt(receipt).errors, [
      "bad_kind",
      "bad_version",
      "bad_verdict",
      "bad_verified_at",
      "bad_bundle_digest",
      "bad_errors",
      "bad_provisional_reasons",
      "bad_insufficient_reasons",
      "bad_summary",
      "bad_error_codes",
      "bad_signature",
    ]);
  });

  test("a float in the receipt fails its signature check", () => {
    const receipt = freshReceipt();
    (member(receipt, "summary") as JsonObject).set("ratio", new PyFloat(0.5));
    assert.deepEqual(verifyVerificationReceipt(receipt).errors, ["bad_signature"]);
  });

  test("not an object: every other member is null, even with a bundle", () => {
    for (const receipt of [[], "receipt", null, 1, new PyFloat(1)] as JsonValue[]) {
      assert.deepEqual(verifyVerificationReceipt(receipt, { bundle: corpusBundle() }), {
        valid: false,
        errors: ["not_an_object"],
        issuer: null,
        verdict: null,
        verified_at: null,
        bundle_digest: null,
        digest_match: null,
      } satisfies ReceiptCheck);
    }
  });

  test("echoed members are returned as they are, null when absent", () => {
    const check = verifyVerificationReceipt(jsonObject({ verdict: 7, issuer: jsonObject({}) }));
    assert.equal(check.verdict, 7);
    assert.ok(isObject(check.issuer));
    assert.equal(check.verified_at, null);
    assert.equal(check.bundle_digest, null);
  });

  describe("bundle digest", () => {
    const cases: [string, JsonValue | Uint8Array, boolean | null][] = [
      ["a parsed bundle", vector("bundle.json"), true],
      ["bundle bytes", vectorBytes("bundle.json"), true],
      ["bundle text", vectorBytes("bundle.json").toString(), true],
      ["another bundle", vector("other_bundle.json"), false],
      ["bytes that are not JSON", Buffer.from("{"), false],
      [
        "bytes with a BOM",
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), vectorBytes("bundle.json")]),
        false,
      ],
      ["text with a duplicate member", '{"a":1,"a":1}', false],
      ["a bundle holding a float", parseJson('{"a":1.0}'), false],
      ["null (Python's bundle=None)", null, null],
    ];
    for (const [name, bundle, match] of cases) {
      test(name, () => {
        const check = verifyVerificationReceipt(freshReceipt(), { bundle });
        assert.equal(check.digest_match, match);
        assert.deepEqual(check.errors, match === false ? ["bundle_digest_mismatch"] : []);
      });
    }
  });

  describe("revocations", () => {
    const revocation = (revokedAt: string, signer = issuerSigner): JsonObject =>
      signRevocationStatement(signer, { revokedAt, reason: "key-compromise" });

    test("revoked before verified_at → key_revoked once per statement", () => {
      const earlier = revocation("2026-09-23T20:00:00Z");
      const atTheSameInstant = revocation("2026-09-23T21:00:00.000Z");
      const check = verifyVerificationReceipt(freshReceipt(), {
        revocations: [earlier, atTheSameInstant],
      });
      assert.deepEqual(check.errors, ["key_revoked", "key_revoked"]);
    });

    test("revoked after verified_at, or another key revoked → still valid", () => {
      const check = verifyVerificationReceipt(freshReceipt(), {
        revocations: [
          revocation("2026-09-23T21:00:00.001Z"),
          revocation("2020-01-01T00:00:00Z", otherSigner),
        ],
      });
      assert.deepEqual(check.errors, []);
    });

    test("each bad statement is one bad_revocation, before key_revoked", () => {
      const tampered = revocation("2026-01-01T00:00:00Z");
      tampered.set("reason", "changed");
      const check = verifyVerificationReceipt(freshReceipt(), {
        revocations: [revocation("2026-01-01T00:00:00Z"), "junk", tampered, jsonObject({ key: 1 })],
      });
      assert.deepEqual(check.errors, [
        "bad_revocation",
        "bad_revocation",
        "bad_revocation",
        "key_revoked",
      ]);
    });

    test("an empty list checks nothing", () => {
      assert.deepEqual(verifyVerificationReceipt(freshReceipt(), { revocations: [] }).errors, []);
    });

    test("no key_revoked without a valid verified_at", () => {
      const undated = copy(freshReceipt());
      undated.set("verified_at", "yesterday");
      const check = verifyVerificationReceipt(resign(undated, issuerSigner), {
        revocations: [revocation("2020-01-01T00:00:00Z")],
      });
      assert.deepEqual(check.errors, ["bad_verified_at"]);
    });

    // REF-CRASH (verifier.md §6.2 step 13, §11.3): the reference raises on these inputs. We
    // answer with one bad_revocation for the unusable list and evaluate no revocation.
    const crashing: [string, () => JsonObject][] = [
      [
        "a float in a statement",
        () =>
          signedAsIs(
            jsonObject({
              key: issuerSigner.did,
              revoked_at: "2020-01-01T00:00:00Z",
              weight: new PyFloat(1.5),
            }),
          ),
      ],
      [
        "a truthy non-string sig.value",
        () => {
          const statement = revocation("2020-01-01T00:00:00Z");
          (member(statement, "sig") as JsonObject).set("value", 12345);
          return statement;
        },
      ],
      [
        "a revoked_at that is not a real instant",
        () => signedAsIs(jsonObject({ key: issuerSigner.did, revoked_at: "2026-02-30T00:00:00Z" })),
      ],
    ];
    for (const [name, statement] of crashing) {
      test(`REF-CRASH: ${name} → one bad_revocation, no key_revoked`, () => {
        const check = verifyVerificationReceipt(freshReceipt(), {
          revocations: [revocation("2020-01-01T00:00:00Z"), statement()],
        });
        assert.deepEqual(check.errors, ["bad_revocation"]);
        assert.equal(check.valid, false);
      });
    }

    test("REF-CRASH: a verified_at that is not a real instant → bad_verified_at, no key_revoked", () => {
      const impossible = copy(freshReceipt());
      impossible.set("verified_at", "2026-02-30T21:00:00Z");
      const receipt = resign(impossible, issuerSigner);
      assert.deepEqual(verifyVerificationReceipt(receipt).errors, []);
      const check = verifyVerificationReceipt(receipt, {
        revocations: [revocation("2020-01-01T00:00:00Z")],
      });
      assert.deepEqual(check.errors, ["bad_verified_at"]);
    });
  });
});

/**
 * Signs a statement exactly as given (a float cannot be canonicalised, so such a statement
 * gets a placeholder value), bypassing `signRevocationStatement`'s own checks.
 */
function signedAsIs(statement: JsonObject): JsonObject {
  let value = "placeholder";
  try {
    value = signEd25519(issuerSigner, canonicalBytes(statement));
  } catch {}
  statement.set("sig", jsonObject({ alg: "ed25519", key: issuerSigner.did, value }));
  return statement;
}
