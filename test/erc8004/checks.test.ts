/** `checks` are read off the verification of real corpus bundles (src/erc8004/checks.ts). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type ValidationChecks, validationChecks } from "../../src/erc8004/checks.js";
import { verifyBundle } from "../../src/verifier/bundle/verify-bundle.js";
import { recordDigest } from "../../src/verifier/crypto/digest.js";
import {
  isObject,
  type JsonObject,
  type JsonValue,
  jsonObject,
} from "../../src/verifier/json/value.js";
import { corpusValue } from "../support/corpus.js";

const ALL_TRUE: ValidationChecks = {
  task_bound: true,
  chain_intact: true,
  signatures_valid: true,
  termination_present: true,
  caps_respected: true,
  agreements_bound: true,
  anchors_present: true,
};

function checksOf(bundle: JsonValue, taskBound = true): ValidationChecks {
  return validationChecks(verifyBundle(bundle), taskBound);
}

/** The checks that are false, by name. */
function falseChecks(bundle: JsonValue, taskBound = true): string[] {
  return Object.entries(checksOf(bundle, taskBound))
    .filter(([, value]) => value !== true)
    .map(([name]) => name);
}

const vector = (file: string) => corpusValue(`vectors/${file}`);

describe("validationChecks", () => {
  const cases: [file: string, expectedFalse: string[]][] = [
    ["02_happy_full.json", ["anchors_present"]],
    ["03_tampered_body.json", ["chain_intact", "signatures_valid", "anchors_present"]],
    ["04_missing_termination.json", ["termination_present", "anchors_present"]],
    ["05_cap_exceeded.json", ["caps_respected", "anchors_present"]],
    ["13b_attestation_tampered.json", ["signatures_valid", "anchors_present"]],
    ["14a_revoked_key.json", ["signatures_valid", "anchors_present"]],
    ["16d_accept_without_offer.json", ["agreements_bound", "anchors_present"]],
    ["17b_offeree_mismatch.json", ["agreements_bound", "anchors_present"]],
    ["17h_agreement_unreferenced.json", ["agreements_bound", "anchors_present"]],
    ["24b_missing_authority.json", ["agreements_bound", "anchors_present"]],
    ["22f_legacy_state_type.json", ["chain_intact", "anchors_present"]],
    ["25b_head_mismatch.json", ["chain_intact", "anchors_present"]],
    ["10a_anchor_invalid.json", ["anchors_present"]],
    ["25e_head_anchor_invalid.json", ["anchors_present"]],
    ["25f_head_anchor_valid.json", []],
  ];
  for (const [file, expectedFalse] of cases) {
    test(`${file}: false are exactly ${expectedFalse.join(", ") || "none"}`, () => {
      assert.deepEqual(falseChecks(vector(file)), expectedFalse);
    });
  }

  test("task_bound is the binding's result, whatever the verdict", () => {
    assert.deepEqual(falseChecks(vector("25f_head_anchor_valid.json"), false), ["task_bound"]);
  });

  test("a valid anchor entry in `anchors` makes anchors present", () => {
    const bundle = new Map(vector("01_happy_minimal.json") as JsonObject);
    const receipts = bundle.get("receipts") as JsonObject[];
    const last = receipts.at(-1)!;
    bundle.set("anchors", [
      jsonObject({
        target: last.get("receipt_id")!,
        hash: recordDigest(last),
        anchor: jsonObject({ type: "opentimestamps" }),
      }),
    ]);
    assert.equal(verifyBundle(bundle).verdict, "TRUSTED");
    assert.deepEqual(checksOf(bundle), ALL_TRUE);
  });

  test("a pass whose spend_cap is unusable does not respect caps", () => {
    const bundle = new Map(vector("02_happy_full.json") as JsonObject);
    const receipts = (bundle.get("receipts") as JsonObject[]).map((r) => new Map(r));
    const pass = receipts[0]!;
    assert.equal(pass.get("type"), "session.pass.created");
    const body = new Map(pass.get("body") as JsonObject);
    body.set("spend_cap", "lots");
    pass.set("body", body);
    bundle.set("receipts", receipts);
    const result = verifyBundle(bundle);
    assert.ok(result.errors.some((e) => e.detail === "pass spend_cap is not an object"));
    assert.equal(validationChecks(result, true).caps_respected, false);
  });

  test("a bundle that stops at an early exit has every check false but task_bound", () => {
    for (const bundle of [
      jsonObject({ spec: "continuity-receipt/9.9", receipts: [] }),
      jsonObject({ spec: "continuity-receipt/0.4", receipts: [] }),
    ]) {
      assert.ok(isObject(bundle));
      assert.deepEqual(checksOf(bundle), {
        ...Object.fromEntries(Object.keys(ALL_TRUE).map((name) => [name, false])),
        task_bound: true,
      });
    }
  });

  test("a non-object receipt breaks the chain", () => {
    const bundle = new Map(vector("01_happy_minimal.json") as JsonObject);
    bundle.set("receipts", [...(bundle.get("receipts") as JsonValue[]), null]);
    assert.equal(checksOf(bundle).chain_intact, false);
  });
});
