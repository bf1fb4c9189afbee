/** Step L of verifier.md §4: the bundle-level `chain_head` (checked for every spec). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { VerifyResult } from "../../../../src/verifier/bundle/result.js";
import { type JsonObject, PyFloat } from "../../../../src/verifier/json/value.js";
import { chainHeadFor, type JsonInput, toJson } from "../../../../src/verifier/producer/index.js";
import {
  builderOf,
  digestOf,
  expectOutcome,
  type Outcome,
  record,
  setInBody,
  standardRecords,
  V01,
  V06,
} from "./fixtures.js";

const OTS = { type: "opentimestamps", proof_ref: "https://anchors.example/sha256:abc" };
const MISMATCH = ["head_mismatch", "chain_head does not match the final receipt", null] as const;
const INVALID_ANCHOR = [
  "head_anchor_invalid",
  "chain_head anchored entry is invalid",
  null,
] as const;

/** A chain of `spec` whose `chain_head` is built from its final receipt by `head`. */
function headed(
  head: (last: JsonObject) => JsonInput,
  expected: Outcome,
  options: { spec?: string; requireAnchor?: boolean } = {},
): VerifyResult {
  const builder = builderOf(options.spec ?? V06, [record("pass"), record("termination")]);
  const last = (builder.build().get("receipts") as JsonObject[]).at(-1)!;
  return expectOutcome(builder.build({ chainHead: head(last) }), expected, {
    requireAnchor: options.requireAnchor ?? false,
  });
}

function headSummary(result: VerifyResult, expected: JsonInput | undefined): void {
  assert.deepStrictEqual(
    result.summary.get("chain_head"),
    expected === undefined ? undefined : toJson(expected),
  );
}

/** `chainHeadFor(last)` with one member replaced. */
const headWith = (name: string, value: JsonInput) => (last: JsonObject) => {
  const head = chainHeadFor(last);
  head.set(name, toJson(value));
  return head;
};

describe("L. chain_head", () => {
  test("a head matching the final receipt, without an anchor, is TRUSTED (vector 25a)", () => {
    const result = headed((last) => chainHeadFor(last), { verdict: "TRUSTED" });
    headSummary(result, undefined);
  });

  test("head_anchor_missing: require_anchor and a head that is not anchored (vector 25d)", () => {
    headed(
      (last) => chainHeadFor(last),
      { verdict: "PROVISIONAL", provisional: ["anchor_missing", "head_anchor_missing"] },
      { requireAnchor: true },
    );
  });

  test("an anchored head is summarised with the final seq and the anchor type (vector 25f)", () => {
    const result = headed((last) => chainHeadFor(last, OTS), { verdict: "TRUSTED" });
    headSummary(result, { seq: 1, anchored: "opentimestamps" });
    headed(
      (last) => chainHeadFor(last, OTS),
      { verdict: "PROVISIONAL", provisional: ["anchor_missing"] },
      { requireAnchor: true },
    );
  });

  for (const [member, value] of [
    ["digest", digestOf("e")],
    ["seq", 2],
    ["receipt_id", "pass"],
  ] as const) {
    test(`head_mismatch: a head whose ${member} is not the final receipt's (vectors 25b/25c)`, () => {
      headed(headWith(member, value), { verdict: "UNTRUSTED", errors: [MISMATCH] });
    });
  }

  test("head_mismatch: an empty head object", () => {
    headed(() => ({}), { verdict: "UNTRUSTED", errors: [MISMATCH] });
  });

  test("head_mismatch ends the step: an invalid anchor is then not reported", () => {
    headed(
      (last) => {
        const head = chainHeadFor(last, { type: "carrier-pigeon" });
        head.set("seq", 7);
        return head;
      },
      { verdict: "UNTRUSTED", errors: [MISMATCH] },
    );
  });

  test("head members are compared with Python ==, so seq 1.0 and True match seq 1", () => {
    headed(headWith("seq", new PyFloat(1)), { verdict: "TRUSTED" });
    headed(headWith("seq", true), { verdict: "TRUSTED" });
  });

  for (const [label, anchored] of [
    ["an unknown type", { type: "carrier-pigeon", proof_ref: "x" }],
    ["an empty proof_ref", { type: "opentimestamps", proof_ref: "" }],
    ["a non-string proof_ref", { type: "custom", proof_ref: 5 }],
    ["no proof_ref", { type: "public-chain" }],
    ["a string", "opentimestamps"],
    ["false (only null counts as absent)", false],
  ] as const) {
    test(`head_anchor_invalid: anchored with ${label} (vector 25e)`, () => {
      const result = headed(headWith("anchored", anchored), {
        verdict: "UNTRUSTED",
        errors: [INVALID_ANCHOR],
      });
      headSummary(result, undefined);
    });
  }

  test("the head is checked whatever the spec, 0.1 included", () => {
    headed(
      headWith("digest", digestOf("e")),
      { verdict: "UNTRUSTED", errors: [MISMATCH] },
      { spec: V01 },
    );
  });

  test("the head describes the last object receipt, ignoring non-object entries after it", () => {
    const builder = builderOf(V06, [record("pass"), record("termination")]);
    const last = (builder.build().get("receipts") as JsonObject[]).at(-1)!;
    builder.appendRaw(null);
    expectOutcome(builder.build({ chainHead: chainHeadFor(last) }), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "receipt 2 is not an object", null]],
    });
  });

  test("the head is not checked when the final receipt cannot be digested", () => {
    const builder = builderOf(V06, [
      record("pass"),
      record("termination", { tamper: setInBody("ratio", new PyFloat(0.5)) }),
    ]);
    expectOutcome(builder.build({ chainHead: { seq: 9, anchored: "?" } }), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "termination"],
        ["bad_signature", "receipt is not canonically encodable", "termination"],
      ],
    });
  });

  test("the standard task also verifies with a matching head", () => {
    const builder = builderOf(V06, standardRecords());
    const last = (builder.build().get("receipts") as JsonObject[]).at(-1)!;
    const result = expectOutcome(builder.build({ chainHead: chainHeadFor(last, OTS) }), {
      verdict: "TRUSTED",
    });
    headSummary(result, { seq: 5, anchored: "opentimestamps" });
  });
});
