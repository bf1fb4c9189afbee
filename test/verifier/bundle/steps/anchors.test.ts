/** Step K of verifier.md §4: anchor entries bind receipts by digest; `require_anchor`. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { VerifyResult } from "../../../../src/verifier/bundle/result.js";
import { type JsonObject, PyFloat } from "../../../../src/verifier/json/value.js";
import { anchorEntry, type JsonInput, toJson } from "../../../../src/verifier/producer/index.js";
import {
  builderOf,
  digestOf,
  expectOutcome,
  type Outcome,
  record,
  setInBody,
  standardRecords,
  V01,
} from "./fixtures.js";

const OTS = { type: "opentimestamps", proof_ref: "ots:termination" };

/** The standard chain, with anchors computed from its receipts. */
function anchored(
  anchors: (receipts: JsonObject[]) => JsonInput,
  expected: Outcome,
  requireAnchor = false,
): VerifyResult {
  const builder = builderOf(V01, standardRecords());
  const receipts = builder.build().get("receipts") as JsonObject[];
  return expectOutcome(builder.build({ anchors: anchors(receipts) }), expected, { requireAnchor });
}

function anchorSummary(result: VerifyResult, expected: JsonInput | undefined): void {
  assert.deepStrictEqual(
    result.summary.get("anchors"),
    expected === undefined ? undefined : toJson(expected),
  );
}

describe("K. anchors", () => {
  test("an anchor without metadata binds a receipt hash-only", () => {
    const result = anchored((receipts) => [anchorEntry(receipts[5]!)], { verdict: "TRUSTED" });
    anchorSummary(result, ["hash-only"]);
  });

  test("valid anchor types are listed in entry order", () => {
    const result = anchored(
      (receipts) => [
        anchorEntry(receipts[5]!, OTS),
        anchorEntry(receipts[0]!),
        anchorEntry(receipts[1]!, { type: "custom" }),
        anchorEntry(receipts[2]!, { type: "public-chain", chain: "example" }),
        anchorEntry(receipts[3]!, null),
      ],
      { verdict: "TRUSTED" },
    );
    anchorSummary(result, ["opentimestamps", "custom", "public-chain"]);
  });

  test("anchor_invalid: a hash that is not the target's digest (vector 10a); the summary is still set", () => {
    const result = anchored(() => [{ target: "termination", hash: digestOf("d") }], {
      verdict: "UNTRUSTED",
      errors: [["anchor_invalid", "anchor invalid for termination", null]],
    });
    anchorSummary(result, ["hash-only"]);
  });

  for (const [label, target, printed] of [
    ["an unknown receipt id", "nobody", "nobody"],
    ["a non-string target", 5, "5"],
    ["no target", undefined, "None"],
  ] as const) {
    test(`anchor_invalid: ${label} is printed with str()`, () => {
      anchored(
        (receipts) => {
          const entry = anchorEntry(receipts[5]!);
          if (target === undefined) entry.delete("target");
          else entry.set("target", target);
          return [entry];
        },
        {
          verdict: "UNTRUSTED",
          errors: [["anchor_invalid", `anchor invalid for ${printed}`, null]],
        },
      );
    });
  }

  test("anchor_invalid: a target that cannot be digested", () => {
    const builder = builderOf(
      V01,
      standardRecords({ termination: { tamper: setInBody("ratio", new PyFloat(0.5)) } }),
    );
    const bundle = builder.build({ anchors: [{ target: "termination", hash: digestOf("d") }] });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "termination"],
        ["bad_signature", "receipt is not canonically encodable", "termination"],
        ["anchor_invalid", "anchor invalid for termination", null],
      ],
    });
  });

  for (const [label, meta, printed] of [
    ["an unknown type (vector 10c)", { type: "carrier-pigeon" }, "'carrier-pigeon'"],
    ["no type", { proof_ref: "x" }, "None"],
    ["metadata that is not an object", "opentimestamps", "'opentimestamps'"],
    ["metadata that is a list", [], "[]"],
  ] as const) {
    test(`anchor_invalid: anchor metadata with ${label}`, () => {
      const result = anchored((receipts) => [anchorEntry(receipts[5]!, meta)], {
        verdict: "UNTRUSTED",
        errors: [["anchor_invalid", `unknown anchor type: ${printed}`, null]],
      });
      anchorSummary(result, ["hash-only"]);
    });
  }

  test("targets are looked up by receipt id, and a later receipt with the same id wins", () => {
    const builder = builderOf(V01, [
      record("pass"),
      record("decision", { receiptId: "twin" }),
      record("execution", { receiptId: "twin" }),
      record("termination"),
    ]);
    const [, first, second] = builder.build().get("receipts") as JsonObject[];
    expectOutcome(builder.build({ anchors: [anchorEntry(second!)] }), { verdict: "TRUSTED" });
    expectOutcome(builder.build({ anchors: [anchorEntry(first!)] }), {
      verdict: "UNTRUSTED",
      errors: [["anchor_invalid", "anchor invalid for twin", null]],
    });
  });

  test("non-object entries are reported by the shape pass and skipped here", () => {
    const result = anchored((receipts) => [null, anchorEntry(receipts[5]!, OTS)], {
      verdict: "UNTRUSTED",
      errors: [["anchor_invalid", "anchor entry is not an object", null]],
    });
    anchorSummary(result, ["opentimestamps"]);
  });
});

describe("K. require_anchor", () => {
  test("anchor_missing: no anchors member (vector 10b)", () => {
    const result = expectOutcome(
      builderOf(V01, standardRecords()).build(),
      { verdict: "PROVISIONAL", provisional: ["anchor_missing"] },
      { requireAnchor: true },
    );
    anchorSummary(result, undefined);
  });

  test("anchor_missing: an empty anchors list is falsy", () => {
    anchored(() => [], { verdict: "PROVISIONAL", provisional: ["anchor_missing"] }, true);
  });

  for (const [label, anchors] of [
    ["{}", {}],
    ['""', ""],
    ["0", 0],
  ] as const) {
    test(`anchor_missing: anchors ${label} is falsy, besides not being a list`, () => {
      anchored(
        () => anchors,
        {
          verdict: "UNTRUSTED",
          errors: [["malformed", "anchors is not a list", null]],
          provisional: ["anchor_missing"],
        },
        true,
      );
    });
  }

  test("a truthy anchors value that is not a list is only reported as malformed", () => {
    const result = anchored(
      () => "anchored",
      { verdict: "UNTRUSTED", errors: [["malformed", "anchors is not a list", null]] },
      true,
    );
    anchorSummary(result, undefined);
  });

  test("without require_anchor, missing anchors change nothing", () => {
    const result = anchored(() => [], { verdict: "TRUSTED" });
    anchorSummary(result, undefined);
  });

  test("a valid anchor satisfies require_anchor", () => {
    anchored((receipts) => [anchorEntry(receipts[5]!, OTS)], { verdict: "TRUSTED" }, true);
  });
});
