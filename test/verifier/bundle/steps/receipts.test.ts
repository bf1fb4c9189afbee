/** Step C of verifier.md §4: each receipt on its own, checks C1 to C11 in that order. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type JsonObject, PyFloat } from "../../../../src/verifier/json/value.js";
import { BundleBuilder } from "../../../../src/verifier/producer/index.js";
import {
  chain,
  decisionBody,
  digestOf,
  executionBody,
  expectOutcome,
  passBody,
  record,
  setInBody,
  standardRecords,
  stateCommitmentBody,
  stranger,
  TASK_ID,
  V01,
  V02,
  V03,
  V04,
  V05,
  V06,
  without,
} from "./fixtures.js";

describe("C1. receipt spec", () => {
  test("version_unsupported: a receipt's own spec is reported and its other checks still run", () => {
    const records = standardRecords({
      decision: {
        spec: "continuity-receipt/0.0",
        body: without(decisionBody, "model"),
      },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["version_unsupported", "receipt spec='continuity-receipt/0.0'", "decision"],
        ["malformed", "missing body fields ['model']", "decision"],
      ],
    });
  });

  test("version_unsupported: a missing receipt spec prints as None", () => {
    const records = standardRecords({ execution: { envelope: { spec: null } } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [["version_unsupported", "receipt spec=None", "execution"]],
    });
  });

  test("mixed-version bundles: every receipt is checked under its own spec", () => {
    // A 0.5 state commitment and a 0.6 grant inside a 0.1 bundle; the 0.5 vocabulary binds only
    // the 0.5 receipt, so the 0.1 execution with an unknown sandbox class passes.
    const records = [
      record("pass"),
      record("execution", { body: { ...executionBody, sandbox_class: "docker" } }),
      record("state", { spec: V05 }),
      record("execution", {
        spec: V05,
        receiptId: "execution-0.5",
        body: { ...executionBody, sandbox_class: "docker" },
      }),
      record("termination", { spec: V03 }),
    ];
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "sandbox_class is unknown", "execution-0.5"]],
    });
  });
});

describe("C2. task_id", () => {
  test("task_mismatch: a receipt task_id that differs from the bundle's", () => {
    const records = standardRecords({ settlement: { envelope: { task_id: "urn:uuid:other" } } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [["task_mismatch", "receipt task_id != bundle task_id", "settlement"]],
    });
  });

  test("task_mismatch: absent on both sides, or absent against null, is equal", () => {
    const builder = new BundleBuilder(V01);
    for (const entry of standardRecords()) builder.append(entry);
    expectOutcome(builder.build(), { verdict: "TRUSTED" });
    expectOutcome(builder.build({ members: { task_id: null } }), { verdict: "TRUSTED" });
  });

  test("task_mismatch: compared with Python ==, so 1 == 1.0 == True", () => {
    const builder = new BundleBuilder(V01, 1);
    for (const entry of standardRecords()) builder.append(entry);
    // A float at bundle level is never canonicalised, so it is harmless there.
    expectOutcome(builder.build({ members: { task_id: new PyFloat(1) } }), { verdict: "TRUSTED" });
    expectOutcome(builder.build({ members: { task_id: true } }), { verdict: "TRUSTED" });
  });
});

describe("C3. record type", () => {
  test("unknown_type: the rest of the receipt is skipped and the next receipt breaks the chain", () => {
    // The body is tampered after signing, yet no bad_signature: the signature is never checked.
    const records = standardRecords({
      execution: { type: "task.exec", tamper: setInBody("sandbox_class", "none") },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["unknown_type", "type='task.exec'", "execution"],
        ["chain_break", "prev digest mismatch", "delivery"],
      ],
    });
  });

  test("unknown_type: a missing or non-string type is repr()'d; its own chain check is skipped too", () => {
    const records = standardRecords({
      decision: { envelope: { type: null } },
      execution: { envelope: { type: 5 } },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["unknown_type", "type=None", "decision"],
        ["unknown_type", "type=5", "execution"],
        ["chain_break", "prev digest mismatch", "delivery"],
      ],
    });
  });

  for (const spec of [V01, V02, V03, V04]) {
    test(`unknown_type: state.commitment is not a record type under ${spec}`, () => {
      const records = [record("pass"), record("state", { spec }), record("termination")];
      expectOutcome(chain(V05, records), {
        verdict: "UNTRUSTED",
        errors: [
          ["unknown_type", "type='state.commitment'", "state"],
          ["chain_break", "prev digest mismatch", "termination"],
        ],
      });
    });
  }

  test("unknown_type: authority.grant is not a record type under 0.5", () => {
    const records = [record("pass"), record("grant", { spec: V05 }), record("termination")];
    expectOutcome(chain(V06, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["unknown_type", "type='authority.grant'", "grant"],
        ["chain_break", "prev digest mismatch", "termination"],
      ],
      // The grant still counts as a grant for step G (vector 24g).
      provisional: ["authority_unreferenced:grant"],
    });
  });

  test("agreement records and authority.succession are accepted under a 0.1 envelope", () => {
    const records = [record("pass"), record("offer"), record("succession"), record("termination")];
    expectOutcome(chain(V01, records), { verdict: "TRUSTED" });
  });

  test("state.commitment and authority.grant are record types under 0.6", () => {
    const records = [record("pass"), record("state"), record("grant"), record("termination")];
    expectOutcome(chain(V06, records), {
      verdict: "PROVISIONAL",
      provisional: ["authority_unreferenced:grant"],
    });
  });
});

describe("C5. required body fields", () => {
  test("malformed: missing fields are listed in the required order as a Python list", () => {
    const records = standardRecords({ pass: { body: without(passBody, "quotas", "gate_id") } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "missing body fields ['gate_id', 'quotas']", "pass"]],
    });
  });

  test("malformed: presence is all that counts, so a null required field is fine", () => {
    const records = standardRecords({ pass: { body: { ...passBody, gate_id: null } } });
    expectOutcome(chain(V01, records), { verdict: "TRUSTED" });
  });
});

describe("C6. 0.5/0.6 body vocabulary", () => {
  const vocabularyChain = (spec: string, ...middle: ReturnType<typeof record>[]): JsonObject =>
    chain(spec, [record("pass"), ...middle, record("termination")]);

  test("malformed: mandala_class outside gate-lite, gate-hard, local (0.5+ only)", () => {
    const pass = record("pass", { body: { ...passBody, mandala_class: "gate-soft" } });
    expectOutcome(chain(V05, [pass, record("termination")]), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "mandala_class must be gate-lite, gate-hard, or local", "pass"]],
    });
    expectOutcome(chain(V04, [pass, record("termination")]), { verdict: "TRUSTED" });
  });

  for (const sandbox of ["docker", "", 5, null]) {
    test(`malformed: sandbox_class ${JSON.stringify(sandbox)} is unknown`, () => {
      const execution = record("execution", { body: { ...executionBody, sandbox_class: sandbox } });
      expectOutcome(vocabularyChain(V05, execution), {
        verdict: "UNTRUSTED",
        errors: [["malformed", "sandbox_class is unknown", "execution"]],
      });
    });
  }

  const profile = {
    profile_id: "bwrap-default",
    executable_digest: digestOf("a"),
    invocation_digest: digestOf("b"),
  };
  const PROFILE_MESSAGE =
    "runner_profile must contain a nonempty profile_id and sha256 executable_digest and invocation_digest";

  test("a bwrap execution with a well-formed runner_profile is accepted", () => {
    const body = { ...executionBody, sandbox_class: "bwrap", runner_profile: profile };
    expectOutcome(vocabularyChain(V05, record("execution", { body })), { verdict: "TRUSTED" });
  });

  test("malformed: bwrap execution requires runner_profile", () => {
    const body = { ...executionBody, sandbox_class: "bwrap" };
    expectOutcome(vocabularyChain(V05, record("execution", { body })), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "bwrap execution requires runner_profile", "execution"]],
    });
  });

  for (const [label, runnerProfile] of [
    ["an extra member", { ...profile, extra: 1 }],
    ["a missing member", { profile_id: "p", executable_digest: digestOf("a") }],
    ["an uppercase digest", { ...profile, executable_digest: `sha256:${"A".repeat(64)}` }],
    ["an empty profile_id", { ...profile, profile_id: "" }],
    ["null (any class, once the key is present)", null],
  ] as const) {
    test(`malformed: runner_profile with ${label}`, () => {
      const body = { ...executionBody, sandbox_class: "none", runner_profile: runnerProfile };
      expectOutcome(vocabularyChain(V06, record("execution", { body })), {
        verdict: "UNTRUSTED",
        errors: [["malformed", PROFILE_MESSAGE, "execution"]],
      });
    });
  }

  test("malformed: every state.commitment problem is reported, in field order", () => {
    const body = {
      state_kind: "",
      scope: 7,
      count: -1,
      head_digest: "sha256:short",
      merkle_root: digestOf("2"),
    };
    expectOutcome(vocabularyChain(V05, record("state", { body })), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "state_kind must be nonempty text", "state"],
        ["malformed", "scope must be nonempty text", "state"],
        ["malformed", "count must be an exact JSON integer from 0 through 2^53-1", "state"],
        ["malformed", "head_digest must be a sha256 digest", "state"],
        ["malformed", "merkle_root must be a merkle-sha256 digest", "state"],
      ],
    });
  });

  for (const [label, count] of [
    ["true (a bool is not an int)", true],
    ["2^53 (one past the safe range)", 2n ** 53n],
    ['"3" (a string)', "3"],
  ] as const) {
    test(`malformed: state.commitment count ${label}`, () => {
      const body = { ...stateCommitmentBody, count };
      expectOutcome(vocabularyChain(V05, record("state", { body })), {
        verdict: "UNTRUSTED",
        errors: [
          ["malformed", "count must be an exact JSON integer from 0 through 2^53-1", "state"],
        ],
      });
    });
  }

  test("state.commitment count 2^53-1 and a null merkle_root are accepted", () => {
    const body = { ...stateCommitmentBody, count: Number.MAX_SAFE_INTEGER, merkle_root: null };
    expectOutcome(vocabularyChain(V05, record("state", { body })), { verdict: "TRUSTED" });
  });

  test("malformed: a float count such as 5.0 fails the count rule and canonical encoding", () => {
    const state = record("state", { tamper: setInBody("count", new PyFloat(5)) });
    expectOutcome(vocabularyChain(V05, state), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "count must be an exact JSON integer from 0 through 2^53-1", "state"],
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "state"],
        ["bad_signature", "receipt is not canonically encodable", "state"],
        ["chain_break", "prev digest mismatch", "termination"],
      ],
    });
  });
});

describe("C7. issued_at", () => {
  for (const [issuedAt, repr] of [
    ["2026-09-23 20:38:57Z", "'2026-09-23 20:38:57Z'"],
    ["2026-09-23T20:38:57+00:00", "'2026-09-23T20:38:57+00:00'"],
    ["2026-09-23T20:38:57.1234Z", "'2026-09-23T20:38:57.1234Z'"],
    ["2026-09-23T20:38:57z", "'2026-09-23T20:38:57z'"],
    [null, "None"],
    [1790195937, "1790195937"],
  ] as const) {
    test(`malformed: issued_at ${repr} is not RFC 3339 UTC`, () => {
      const records = standardRecords({ delivery: { envelope: { issued_at: issuedAt } } });
      expectOutcome(chain(V01, records), {
        verdict: "UNTRUSTED",
        errors: [["malformed", `issued_at not RFC 3339 UTC: ${repr}`, "delivery"]],
      });
    });
  }

  test("millisecond fractions (1 to 3 digits) are accepted for every spec, 0.1 included", () => {
    const records = standardRecords({
      decision: { issuedAt: "2026-09-23T20:38:57.5Z" },
      execution: { issuedAt: "2026-09-23T20:38:57.123Z" },
    });
    expectOutcome(chain(V01, records), { verdict: "TRUSTED" });
  });
});

describe("C8/C9. chain position and prev", () => {
  for (const [seq, printed] of [
    [5, "5"],
    ["1", "1"],
    [null, "None"],
    [-1, "-1"],
  ] as const) {
    test(`chain_break: seq ${JSON.stringify(seq)} at position 1 prints as "seq ${printed}"`, () => {
      const records = standardRecords({ decision: { envelope: { seq } } });
      expectOutcome(chain(V01, records), {
        verdict: "UNTRUSTED",
        errors: [["chain_break", `seq ${printed} != position 1`, "decision"]],
      });
    });
  }

  test("chain_break: seq is compared with Python ==, so true at position 1 and false at 0 pass", () => {
    const records = standardRecords({
      pass: { envelope: { seq: false } },
      decision: { envelope: { seq: true } },
      execution: { envelope: { seq: true } },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [["chain_break", "seq True != position 2", "execution"]],
    });
  });

  test("chain_break: seq 1.0 equals position 1 (only the float's encoding errors remain)", () => {
    const records = standardRecords({
      decision: { tamper: (receipt) => receipt.set("seq", new PyFloat(1)) },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "decision"],
        ["bad_signature", "receipt is not canonically encodable", "decision"],
        ["chain_break", "prev digest mismatch", "execution"],
      ],
    });
  });

  test("chain_break: a wrong prev breaks only that receipt when it was signed that way", () => {
    const records = standardRecords({ settlement: { envelope: { prev: digestOf("0") } } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [["chain_break", "prev digest mismatch", "settlement"]],
    });
  });

  test("chain_break: the first receipt's prev must be null (an empty string is not None)", () => {
    const records = standardRecords({ pass: { envelope: { prev: "" } } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [["chain_break", "prev digest mismatch", "pass"]],
    });
  });

  test("chain_break: a receipt edited after signing breaks the signature and the next link (vector 03)", () => {
    const records = standardRecords({ decision: { tamper: setInBody("decision", "deny") } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["bad_signature", "signature does not verify", "decision"],
        ["chain_break", "prev digest mismatch", "execution"],
      ],
    });
  });
});

describe("C10. canonical encoding", () => {
  for (const [label, value] of [
    ["a float", new PyFloat(0.7)],
    ["NaN", new PyFloat(Number.NaN)],
    ["a lone surrogate", "\ud800"],
  ] as const) {
    test(`malformed: ${label} inside a receipt gives malformed + bad_signature + chain_break on the next receipt`, () => {
      const records = standardRecords({ decision: { tamper: setInBody("temperature", value) } });
      expectOutcome(chain(V01, records), {
        verdict: "UNTRUSTED",
        errors: [
          ["malformed", "receipt is not canonically encodable (floats are rejected)", "decision"],
          ["bad_signature", "receipt is not canonically encodable", "decision"],
          ["chain_break", "prev digest mismatch", "execution"],
        ],
      });
    });
  }

  test("a receipt after a non-encodable one passes the prev check when its prev is null", () => {
    const records = standardRecords({
      decision: { tamper: setInBody("temperature", new PyFloat(0.7)) },
      execution: { envelope: { prev: null } },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "decision"],
        ["bad_signature", "receipt is not canonically encodable", "decision"],
      ],
    });
  });
});

describe("C11. signature", () => {
  const withSig = (edit: (sig: JsonObject | undefined, receipt: JsonObject) => void) => ({
    tamper: (receipt: JsonObject) => edit(receipt.get("sig") as JsonObject | undefined, receipt),
  });

  for (const [label, tamper] of [
    ["a missing sig", withSig((_, receipt) => receipt.delete("sig"))],
    ["a sig that is not an object", withSig((_, receipt) => receipt.set("sig", "signed"))],
    ["alg other than ed25519", withSig((sig) => sig?.set("alg", "EdDSA"))],
    ["an empty value", withSig((sig) => sig?.set("value", ""))],
    ["a non-string value", withSig((sig) => sig?.set("value", 5))],
  ] as const) {
    test(`bad_signature: "missing or unsupported sig" for ${label}`, () => {
      const records = standardRecords({ termination: tamper });
      expectOutcome(chain(V01, records), {
        verdict: "UNTRUSTED",
        errors: [["bad_signature", "missing or unsupported sig", "termination"]],
      });
    });
  }

  for (const [label, issuer] of [
    ["an issuer.id of another key", { kind: "gate", id: stranger.did }],
    ["a missing issuer.id (verified as '')", { kind: "gate" }],
    ["a non-string issuer.id", { kind: "gate", id: 5 }],
    ["a did:web issuer", { kind: "gate", id: "did:web:gate.example" }],
  ] as const) {
    test(`bad_signature: "signature does not verify" for ${label}`, () => {
      const records = standardRecords({ termination: { envelope: { issuer } } });
      expectOutcome(chain(V01, records), {
        verdict: "UNTRUSTED",
        errors: [["bad_signature", "signature does not verify", "termination"]],
      });
    });
  }

  test("sig.key is never compared with anything", () => {
    const records = standardRecords({
      termination: withSig((sig) => sig?.set("key", stranger.did)),
    });
    expectOutcome(chain(V01, records), { verdict: "TRUSTED" });
  });

  test("signature values in the standard base64 alphabet, or padded, still verify", () => {
    const bundle = chain(V01, standardRecords());
    let rewritten = 0;
    for (const receipt of bundle.get("receipts") as JsonObject[]) {
      const sig = receipt.get("sig") as JsonObject;
      const value = sig.get("value") as string;
      const standard = `${value.replaceAll("-", "+").replaceAll("_", "/")}==`;
      if (standard !== `${value}==`) rewritten++;
      sig.set("value", standard);
    }
    assert.ok(rewritten > 0, "some signature uses - or _");
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });
});

test("C1 to C11 run in order on one receipt, each failure accumulated", () => {
  const records = standardRecords({
    decision: {
      spec: "continuity-receipt/0.0",
      body: without(decisionBody, "model"),
      envelope: {
        task_id: TASK_ID.replace("0a56", "0a57"),
        issued_at: "yesterday",
        seq: 9,
        prev: null,
      },
      tamper: (receipt) => (receipt.get("sig") as JsonObject).set("alg", "none"),
    },
  });
  expectOutcome(chain(V01, records), {
    verdict: "UNTRUSTED",
    errors: [
      ["version_unsupported", "receipt spec='continuity-receipt/0.0'", "decision"],
      ["task_mismatch", "receipt task_id != bundle task_id", "decision"],
      ["malformed", "missing body fields ['model']", "decision"],
      ["malformed", "issued_at not RFC 3339 UTC: 'yesterday'", "decision"],
      ["chain_break", "seq 9 != position 1", "decision"],
      ["chain_break", "prev digest mismatch", "decision"],
      ["bad_signature", "missing or unsupported sig", "decision"],
    ],
  });
});

test("§3.1: the producer writes the envelope members in the reference's order, sig last", () => {
  const receipt = new BundleBuilder(V01, TASK_ID).append(record("pass"));
  assert.deepStrictEqual(
    [...receipt.keys()],
    ["spec", "receipt_id", "task_id", "issued_at", "issuer", "type", "seq", "prev", "body", "sig"],
  );
  assert.deepStrictEqual([...(receipt.get("sig") as JsonObject).keys()], ["alg", "key", "value"]);
});
