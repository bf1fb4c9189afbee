/** Steps A (early exits) and B (container shapes) of verifier.md §4. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { verifyBundle } from "../../../../src/verifier/bundle/verify-bundle.js";
import type { JsonValue } from "../../../../src/verifier/json/value.js";
import { builderOf, chain, expectOutcome, record, standardRecords, V01 } from "./fixtures.js";

/** A bundle member whose deepest value sits at `depth` (the bundle root is depth 1). */
function nestedTo(depth: number): JsonValue {
  let value: JsonValue = 0;
  for (let level = 2; level < depth; level++) value = [value];
  return value;
}

describe("A. early exits", () => {
  test("malformed: a bundle that is not an object ends verification with an empty summary", () => {
    const result = expectOutcome([], {
      verdict: "UNTRUSTED",
      errors: [["malformed", "bundle is not an object", null]],
    });
    assert.equal(result.summary.size, 0);
  });

  test("nesting_too_deep: a value at depth 65 (scalars count), while depth 64 is accepted", () => {
    expectOutcome(chain(V01, standardRecords(), { members: { deep: nestedTo(64) } }), {
      verdict: "TRUSTED",
    });
    const result = expectOutcome(
      chain(V01, standardRecords(), { members: { deep: nestedTo(65) } }),
      {
        verdict: "UNTRUSTED",
        errors: [["nesting_too_deep", "bundle nesting exceeds depth 64", null]],
      },
    );
    assert.equal(result.summary.size, 0);
  });

  test("nesting_too_deep: the depth check runs before the spec check", () => {
    const bundle = chain(V01, standardRecords(), {
      members: { spec: "continuity-receipt/9.9", deep: nestedTo(65) },
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [["nesting_too_deep", "bundle nesting exceeds depth 64", null]],
    });
  });

  test("version_unsupported: the bundle spec is repr()'d, a missing one as None", () => {
    expectOutcome(chain(V01, standardRecords(), { members: { spec: "continuity-receipt/0.7" } }), {
      verdict: "UNTRUSTED",
      errors: [["version_unsupported", "spec='continuity-receipt/0.7'", null]],
    });
    const bundle = chain(V01, standardRecords());
    bundle.delete("spec");
    const result = expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [["version_unsupported", "spec=None", null]],
    });
    assert.equal(result.summary.size, 0);
  });

  for (const [label, receipts] of [
    ["an empty list", []],
    ["an object", { 0: {} }],
    ["null", null],
  ] as const) {
    test(`malformed: "bundle has no receipts" when receipts is ${label}`, () => {
      expectOutcome(chain(V01, standardRecords(), { members: { receipts } }), {
        verdict: "UNTRUSTED",
        errors: [["malformed", "bundle has no receipts", null]],
      });
    });
  }

  test("too_many_receipts: 10,001 receipts exit early; 10,000 are verified", () => {
    const over = chain(V01, [], {
      members: { receipts: Array.from({ length: 10_001 }, () => ({})) },
    });
    expectOutcome(over, {
      verdict: "UNTRUSTED",
      errors: [["too_many_receipts", "10001 receipts exceeds limit 10000", null]],
    });
    const limit = chain(V01, [], {
      members: { receipts: Array.from({ length: 10_000 }, () => ({})) },
    });
    const result = verifyBundle(limit);
    assert.ok(!result.errors.some((error) => error.code === "too_many_receipts"));
    assert.equal(result.summary.get("receipts"), 10_000);
  });
});

describe("B. shape pass", () => {
  test("malformed: a non-object receipt is reported by position with no receipt_id", () => {
    const builder = builderOf(V01, standardRecords().slice(0, 2));
    builder.appendRaw(null);
    for (const entry of standardRecords().slice(2)) builder.append(entry);
    // The chain pointer skips the null entry, so the next receipt chains to the decision.
    const result = expectOutcome(builder.build(), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "receipt 2 is not an object", null]],
    });
    assert.equal(result.summary.get("receipts"), 7);
  });

  test("malformed: the pinned hostile case receipts[0]=null (no pass, next receipt breaks the chain)", () => {
    const bundle = chain(V01, standardRecords());
    (bundle.get("receipts") as JsonValue[])[0] = null;
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt 0 is not an object", null],
        ["chain_break", "prev digest mismatch", "decision"],
        ["malformed", "chain has no session.pass.created receipt", null],
      ],
    });
  });

  test("malformed: a body that is not an object; the receipt is then skipped without advancing the chain", () => {
    const records = standardRecords({ decision: { body: "allow" } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "body is not an object", "decision"],
        ["chain_break", "prev digest mismatch", "execution"],
      ],
    });
  });

  test("malformed: shape errors carry receipt_id only when it is a string", () => {
    const records = standardRecords({ decision: { body: [], envelope: { receipt_id: 7 } } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "body is not an object", null],
        ["chain_break", "prev digest mismatch", "execution"],
      ],
    });
  });

  test("malformed: an issuer that is not an object (signed that way, so only the signature fails)", () => {
    const records = standardRecords({ decision: { envelope: { issuer: "gate" } } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "issuer is not an object", "decision"],
        ["bad_signature", "signature does not verify", "decision"],
      ],
    });
  });

  test("malformed: the pinned hostile case issuer=null (set after signing)", () => {
    const records = standardRecords({
      decision: { tamper: (receipt) => receipt.set("issuer", null) },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "issuer is not an object", "decision"],
        ["bad_signature", "signature does not verify", "decision"],
        ["chain_break", "prev digest mismatch", "execution"],
      ],
    });
  });

  test("bundle members of the wrong kind are reported in member order: anchors, revocations, disclosure_map, chain_head", () => {
    const bundle = chain(V01, standardRecords(), {
      anchors: "none",
      revocations: "none",
      disclosureMap: "none",
      chainHead: "none",
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "anchors is not a list", null],
        ["bad_revocation", "revocations must be a list", null],
        ["malformed", "disclosure_map is not an object", null],
        ["malformed", "chain_head is not an object", null],
      ],
    });
  });

  test("anchor_invalid / bad_revocation: each non-object entry of the anchors and revocations lists", () => {
    const bundle = chain(V01, standardRecords(), {
      anchors: [null, 1],
      revocations: ["statement"],
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["anchor_invalid", "anchor entry is not an object", null],
        ["anchor_invalid", "anchor entry is not an object", null],
        ["bad_revocation", "revocation statements must be objects", null],
      ],
    });
  });

  test("null bundle members count as absent", () => {
    const bundle = chain(V01, standardRecords(), {
      anchors: null,
      revocations: null,
      disclosureMap: null,
      chainHead: null,
    });
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });

  test("unknown bundle members are ignored, floats included (never canonicalised)", () => {
    const bundle = chain(V01, standardRecords(), {
      members: { producer: { version: 1.5, ratio: Number.POSITIVE_INFINITY } },
    });
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });

  test("a minimal chain (pass, termination) is TRUSTED", () => {
    expectOutcome(chain(V01, [record("pass"), record("termination")]), { verdict: "TRUSTED" });
  });
});
