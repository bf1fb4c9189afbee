/** Step H of verifier.md §4 (rules of §3.4): redactions, disclosures and erasures. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { commitField } from "../../../../src/verifier/bundle/steps/redactions.js";
import { type JsonObject, PyFloat } from "../../../../src/verifier/json/value.js";
import {
  BundleBuilder,
  type RedactOptions,
  redact,
  toJson,
} from "../../../../src/verifier/producer/index.js";
import {
  acceptBody,
  agent,
  builderOf,
  chain,
  deliveryBody,
  digestOf,
  expectOutcome,
  ISSUED_AT,
  record,
  signerFor,
  standardRecords,
  TASK_ID,
  terminationBody,
  V01,
  V04,
} from "./fixtures.js";

const SALT = "1db6486819e74597bfbd98e4b346d6e3";
const FLAGS = "receipts[3].body.quality_flags";

function redactAt(bundle: JsonObject, path: string, options: Partial<RedactOptions> = {}) {
  return redact(bundle, path, { signerFor, saltHex: SALT, ...options });
}

const standard = (): JsonObject => chain(V01, standardRecords());

function disclosureEntry(bundle: JsonObject, path: string): JsonObject {
  return (bundle.get("disclosure_map") as JsonObject).get(path) as JsonObject;
}

describe("H. redactions", () => {
  test("redacted_without_disclosure: a redaction with no disclosure entry (vector 07)", () => {
    expectOutcome(redactAt(standard(), FLAGS), {
      verdict: "PROVISIONAL",
      provisional: [`redacted_without_disclosure:${FLAGS}`],
    });
  });

  test("a disclosed redaction whose commitment matches is TRUSTED (vector 08)", () => {
    expectOutcome(redactAt(standard(), FLAGS, { disclose: true }), { verdict: "TRUSTED" });
  });

  test("erased_content: an erased redaction with no disclosure (vector 09)", () => {
    expectOutcome(redactAt(standard(), FLAGS, { erase: true }), {
      verdict: "INSUFFICIENT_EVIDENCE",
      insufficient: [`erased_content:${FLAGS}`],
    });
  });

  test("a disclosure entry takes precedence over the erased flag", () => {
    expectOutcome(redactAt(standard(), FLAGS, { erase: true, disclose: true }), {
      verdict: "TRUSTED",
    });
  });

  for (const [erased, reason] of [
    [1, "erased_content"],
    ["yes", "erased_content"],
    [0, "redacted_without_disclosure"],
    [[], "redacted_without_disclosure"],
  ] as const) {
    test(`erased is read with Python truthiness: ${JSON.stringify(erased)} gives ${reason}`, () => {
      const commit = commitField(SALT, toJson(["quality-ok"]));
      const body = { ...deliveryBody, quality_flags: { redacted: true, commit, erased } };
      const bundle = chain(V01, standardRecords({ delivery: { body } }));
      const path = `${reason}:${FLAGS}`;
      expectOutcome(
        bundle,
        reason === "erased_content"
          ? { verdict: "INSUFFICIENT_EVIDENCE", insufficient: [path] }
          : { verdict: "PROVISIONAL", provisional: [path] },
      );
    });
  }

  test("only redacted identical to true makes a redaction (1 does not)", () => {
    const body = { ...deliveryBody, quality_flags: { redacted: 1, commit: digestOf("0") } };
    expectOutcome(chain(V01, standardRecords({ delivery: { body } })), { verdict: "TRUSTED" });
  });

  test("redacted_required: a required body field cannot be redacted, disclosed or not (vector 20)", () => {
    expectOutcome(redactAt(standard(), "receipts[5].body.reason", { disclose: true }), {
      verdict: "UNTRUSTED",
      errors: [["redacted_required", "required field redacted at receipts[5].body.reason", null]],
    });
  });

  test("redacted_required: anything nested under a required field counts (and provenance sees the redaction)", () => {
    const path = "receipts[1].body.input_provenance.observed_sources_hash";
    const commit = commitField(SALT, digestOf("3"));
    expectOutcome(redactAt(standard(), path), {
      verdict: "UNTRUSTED",
      errors: [
        ["redacted_required", `required field redacted at ${path}`, null],
        [
          "provenance_invalid",
          `observed_sources_hash has unsupported form: {'redacted': True, 'commit': '${commit}'}`,
          "decision",
        ],
      ],
    });
  });

  test("redacted_required: paths are split naively on dots, so a member named reason.note counts as reason", () => {
    const redaction = { redacted: true, commit: commitField(SALT, "none") };
    const body = { ...terminationBody, "reason.note": redaction };
    expectOutcome(chain(V01, standardRecords({ termination: { body } })), {
      verdict: "UNTRUSTED",
      errors: [
        ["redacted_required", "required field redacted at receipts[5].body.reason.note", null],
      ],
    });
  });

  test("redacted_required uses the base table: a 0.4 accept's offeree is not required", () => {
    const builder = new BundleBuilder(V04, TASK_ID);
    builder.append(record("pass"));
    const offer = builder.append(record("offer"));
    builder.append({
      type: "agreement.accept",
      body: acceptBody(offer),
      signer: agent,
      issuedAt: ISSUED_AT,
      receiptId: "accept",
    });
    builder.append(record("termination"));
    const path = "receipts[2].body.offeree";
    const commit = commitField(SALT, agent.did);
    expectOutcome(redactAt(builder.build(), path), {
      verdict: "UNTRUSTED",
      // The accept check then reads the redaction object as the offeree.
      errors: [
        [
          "malformed",
          `accept offeree is not a string: {'redacted': True, 'commit': '${commit}'}`,
          "accept",
        ],
      ],
      provisional: ["agreement_unreferenced:accept", `redacted_without_disclosure:${path}`],
    });
  });

  test("commit_mismatch: a disclosed value that does not match the commitment (vector 21)", () => {
    const bundle = redactAt(standard(), FLAGS, { disclose: true });
    disclosureEntry(bundle, FLAGS).set("value", ["quality-poor"]);
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [["commit_mismatch", `commit mismatch at ${FLAGS}`, null]],
    });
  });

  for (const [label, salt, value] of [
    ["an odd-length salt", "abc", null],
    ["a non-hex salt", "zz", null],
    ["a non-string salt", 5, null],
    ["a value holding a float", SALT, new PyFloat(0.5)],
  ] as const) {
    test(`commit_mismatch: "disclosure entry malformed" for ${label}`, () => {
      const bundle = redactAt(standard(), FLAGS, { disclose: true });
      const entry = disclosureEntry(bundle, FLAGS);
      entry.set("salt", salt);
      if (value !== null) entry.set("value", [value]);
      expectOutcome(bundle, {
        verdict: "UNTRUSTED",
        errors: [["commit_mismatch", `disclosure entry malformed at ${FLAGS}`, null]],
      });
    });
  }

  test("the salt is read with bytes.fromhex, which allows whitespace between byte pairs", () => {
    const bundle = redactAt(standard(), FLAGS, { disclose: true });
    disclosureEntry(bundle, FLAGS).set("salt", SALT.replace(/(..)(?=.)/g, "$1 "));
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });

  for (const [label, entry] of [
    ["has no value", { salt: SALT }],
    ["has no salt", { value: ["quality-ok"] }],
    ["is not an object", "disclosed"],
  ] as const) {
    test(`a disclosure entry that ${label} counts as no disclosure`, () => {
      const bundle = redactAt(standard(), FLAGS, { erase: true });
      bundle.set("disclosure_map", toJson({ [FLAGS]: entry }));
      expectOutcome(bundle, {
        verdict: "INSUFFICIENT_EVIDENCE",
        insufficient: [`erased_content:${FLAGS}`],
      });
    });
  }

  test("disclosure entries that match no redaction are ignored", () => {
    const bundle = standard();
    bundle.set("disclosure_map", toJson({ [FLAGS]: { salt: "zz", value: 1 } }));
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });

  test("redactions anywhere in a receipt count, and are reported depth-first in member order", () => {
    let bundle = redactAt(standard(), FLAGS);
    bundle = redactAt(bundle, "receipts[3].issuer.kind");
    bundle = redactAt(bundle, "receipts[0].issuer.kind");
    expectOutcome(bundle, {
      verdict: "PROVISIONAL",
      provisional: [
        "redacted_without_disclosure:receipts[0].issuer.kind",
        "redacted_without_disclosure:receipts[3].issuer.kind",
        `redacted_without_disclosure:${FLAGS}`,
      ],
    });
  });

  test("list elements are addressed with [i]", () => {
    expectOutcome(redactAt(standard(), `${FLAGS}[0]`), {
      verdict: "PROVISIONAL",
      provisional: [`redacted_without_disclosure:${FLAGS}[0]`],
    });
  });

  test("redaction paths index the object-only receipt list", () => {
    const builder = builderOf(V01, standardRecords().slice(0, 1));
    builder.appendRaw(null);
    for (const entry of standardRecords().slice(1)) builder.append(entry);
    // The delivery is raw entry 4 but the verifier's fourth object receipt, receipts[3].
    const bundle = redactAt(builder.build(), "receipts[4].body.quality_flags", { disclose: true });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [["malformed", "receipt 1 is not an object", null]],
      provisional: [`redacted_without_disclosure:${FLAGS}`],
    });
    const disclosures = bundle.get("disclosure_map") as JsonObject;
    disclosures.set(FLAGS, disclosures.get("receipts[4].body.quality_flags")!);
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [["malformed", "receipt 1 is not an object", null]],
    });
  });
});

describe("redact (producer)", () => {
  test("replaces the value with {redacted, commit[, erased]} and records {salt, value} when disclosing", () => {
    const bundle = redactAt(standard(), FLAGS, { erase: true, disclose: true });
    const delivery = (bundle.get("receipts") as JsonObject[])[3]!;
    const commitment = (delivery.get("body") as JsonObject).get("quality_flags");
    const commit = commitField(SALT, toJson(["quality-ok"]));
    assert.deepStrictEqual(commitment, toJson({ redacted: true, commit, erased: true }));
    assert.deepStrictEqual(
      disclosureEntry(bundle, FLAGS),
      toJson({ salt: SALT, value: ["quality-ok"] }),
    );
  });

  test("is deterministic for a given salt, draws a fresh salt otherwise, and leaves its input alone", () => {
    const original = standard();
    const snapshot = toJson(original);
    assert.deepStrictEqual(redactAt(original, FLAGS), redactAt(original, FLAGS));
    const first = redact(original, FLAGS, { signerFor, disclose: true });
    const second = redact(original, FLAGS, { signerFor, disclose: true });
    assert.notDeepStrictEqual(disclosureEntry(first, FLAGS), disclosureEntry(second, FLAGS));
    assert.deepStrictEqual(original, snapshot);
  });

  for (const path of [
    "receipts[3]",
    "receipts[9].body.x",
    "receipts[3].body.missing",
    "anchors[0].hash",
  ]) {
    test(`refuses a path that names no value inside a receipt: ${path}`, () => {
      assert.throws(() => redactAt(standard(), path), Error);
    });
  }

  test("refuses to re-sign a receipt whose issuer it has no key for", () => {
    assert.throws(
      () =>
        redact(standard(), FLAGS, {
          signerFor: () => {
            throw new Error("no key");
          },
        }),
      /no key/,
    );
  });
});
