/** Step J of verifier.md §4: revocation statements in the bundle and from outside it. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { VerifyResult } from "../../../../src/verifier/bundle/result.js";
import type { Ed25519Signer } from "../../../../src/verifier/crypto/ed25519.js";
import { type JsonObject, type JsonValue, PyFloat } from "../../../../src/verifier/json/value.js";
import {
  type JsonInput,
  signReceipt,
  signRevocationStatement,
  toJson,
} from "../../../../src/verifier/producer/index.js";
import {
  agent,
  chain,
  expectOutcome,
  gate,
  type Outcome,
  standardRecords,
  stranger,
  V01,
} from "./fixtures.js";

const LONG_AGO = "2020-01-01T00:00:00Z";
const LONG_AGO_PRINTED = "2020-01-01T00:00:00+00:00";
const STEPS = ["pass", "decision", "execution", "delivery", "settlement", "termination"];

const revoke = (
  signer: Ed25519Signer,
  revokedAt = LONG_AGO,
  reason = "key-compromise",
): JsonObject => signRevocationStatement(signer, { revokedAt, reason });

/** A statement of `signer`'s key edited and then signed again (a well-signed bad statement). */
function resigned(signer: Ed25519Signer, edits: Record<string, JsonInput>): JsonObject {
  const statement = revoke(signer);
  for (const [name, value] of Object.entries(edits)) statement.set(name, toJson(value));
  return signReceipt(statement, signer);
}

/** A statement of the gate's key edited after signing. */
function tampered(edit: (statement: JsonObject) => void): JsonObject {
  const statement = revoke(gate);
  edit(statement);
  return statement;
}

const gateRevoked = (at: string = LONG_AGO_PRINTED) =>
  STEPS.map(
    (step) => ["key_revoked", `issuer key ${gate.did} was revoked at ${at}`, step] as const,
  );

function verifyWith(
  revocations: JsonInput,
  expected: Outcome,
  external?: JsonValue[],
): VerifyResult {
  const bundle = chain(V01, standardRecords(), { revocations });
  return expectOutcome(
    bundle,
    expected,
    external === undefined ? {} : { externalRevocations: external },
  );
}

function summaryKeys(result: VerifyResult, expected: Record<string, number>): void {
  const added = Object.fromEntries(
    ["revocations_checked", "revocations_external"]
      .filter((key) => result.summary.has(key))
      .map((key) => [key, result.summary.get(key)]),
  );
  assert.deepStrictEqual(added, expected);
}

describe("J. key revocation", () => {
  test("key_revoked: one error per receipt issued at or after revoked_at (vector 14a)", () => {
    const result = verifyWith([revoke(gate)], { verdict: "UNTRUSTED", errors: gateRevoked() });
    summaryKeys(result, { revocations_checked: 1 });
  });

  test("receipts issued before revoked_at stay valid (vector 14b)", () => {
    const result = verifyWith([revoke(gate, "2026-09-24T00:00:00Z")], { verdict: "TRUSTED" });
    summaryKeys(result, { revocations_checked: 1 });
  });

  test("key_revoked: issued_at equal to revoked_at is revoked; times compare as instants, ms included", () => {
    const bundle = chain(
      V01,
      standardRecords({ termination: { issuedAt: "2026-09-23T20:38:57.5Z" } }),
      { revocations: [revoke(gate, "2026-09-23T20:38:57.500Z")] },
    );
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        [
          "key_revoked",
          `issuer key ${gate.did} was revoked at 2026-09-23T20:38:57.500000+00:00`,
          "termination",
        ],
      ],
    });
  });

  test("key_revoked: one error per receipt and verified statement pair", () => {
    const statements = [revoke(gate), revoke(gate, LONG_AGO, "rotation")];
    const errors = gateRevoked().flatMap((row) => [row, row]);
    const result = verifyWith(statements, { verdict: "UNTRUSTED", errors });
    summaryKeys(result, { revocations_checked: 2 });
  });

  test("statements repeated byte for byte are merged; bundle statements come first", () => {
    const statement = revoke(gate);
    const result = verifyWith(
      [statement, statement],
      { verdict: "UNTRUSTED", errors: gateRevoked() },
      [statement],
    );
    summaryKeys(result, { revocations_checked: 1, revocations_external: 1 });
  });

  test("a statement revokes only its own key", () => {
    const result = verifyWith([revoke(agent)], { verdict: "TRUSTED" });
    summaryKeys(result, { revocations_checked: 1 });
  });

  test("receipts whose issued_at fails the pattern are not compared", () => {
    const bundle = chain(V01, standardRecords({ termination: { issuedAt: "late" } }), {
      revocations: [revoke(gate)],
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "issued_at not RFC 3339 UTC: 'late'", "termination"],
        ...gateRevoked().slice(0, 5),
      ],
    });
  });

  test("external statements are applied, and counted as passed in", () => {
    const result = verifyWith(null, { verdict: "UNTRUSTED", errors: gateRevoked() }, [
      revoke(gate),
    ]);
    summaryKeys(result, { revocations_checked: 1, revocations_external: 1 });
    const none = verifyWith(null, { verdict: "TRUSTED" }, []);
    summaryKeys(none, { revocations_external: 0 });
  });

  test("revocations: {} is falsy, so it is reported but external statements still run", () => {
    const result = verifyWith(
      {},
      {
        verdict: "UNTRUSTED",
        errors: [["bad_revocation", "revocations must be a list", null], ...gateRevoked()],
      },
      [revoke(gate)],
    );
    summaryKeys(result, { revocations_checked: 1, revocations_external: 1 });
  });

  for (const [label, revocations, shapeError] of [
    ["a truthy non-list", { statements: [] }, "revocations must be a list"],
    ["a list with a non-object", [5], "revocation statements must be objects"],
  ] as const) {
    test(`revocations that are ${label} disable the step, external statements included`, () => {
      const result = verifyWith(
        revocations,
        { verdict: "UNTRUSTED", errors: [["bad_revocation", shapeError, null]] },
        [revoke(gate)],
      );
      summaryKeys(result, {});
    });
  }
});

describe("J. statements that cannot be used", () => {
  const rejected = (statement: JsonValue, detail: string): void => {
    const result = verifyWith(
      [],
      { verdict: "UNTRUSTED", errors: [["bad_revocation", detail, null]] },
      [statement],
    );
    summaryKeys(result, { revocations_checked: 0, revocations_external: 1 });
  };

  test("bad_revocation: an external statement that is not an object", () => {
    rejected(5, "revocation statement is not an object");
  });

  for (const [label, statement, key] of [
    [
      "a revoked_at that is not a timestamp",
      resigned(gate, { revoked_at: "2020-01-01" }),
      `'${gate.did}'`,
    ],
    ["a non-string key", tampered((s) => s.set("key", 5)), "5"],
    ["no key", tampered((s) => s.delete("key")), "None"],
  ] as const) {
    test(`bad_revocation: "malformed revocation statement" for ${label}`, () => {
      rejected(statement, `malformed revocation statement for ${key}`);
    });
  }

  for (const [label, edit] of [
    ["no sig", (s: JsonObject) => s.delete("sig")],
    ["a sig that is not an object", (s: JsonObject) => s.set("sig", "signed")],
    [
      "an alg other than ed25519",
      (s: JsonObject) => (s.get("sig") as JsonObject).set("alg", "rsa"),
    ],
    ["an empty value", (s: JsonObject) => (s.get("sig") as JsonObject).set("value", "")],
    ["a falsy non-string value", (s: JsonObject) => (s.get("sig") as JsonObject).set("value", 0)],
  ] as const) {
    test(`bad_revocation: "revocation statement unsigned" for ${label}`, () => {
      rejected(tampered(edit), `revocation statement unsigned for '${gate.did}'`);
    });
  }

  test('bad_revocation: "revocation signature invalid" for an edited statement', () => {
    rejected(
      tampered((s) => s.set("reason", "superseded")),
      `revocation signature invalid for '${gate.did}'`,
    );
  });

  test('bad_revocation: "revocation signature invalid" for a statement signed by another key', () => {
    const forged = signReceipt(
      toJson({ key: gate.did, revoked_at: LONG_AGO }) as JsonObject,
      stranger,
    );
    rejected(forged, `revocation signature invalid for '${gate.did}'`);
  });

  test("bad_revocation: each bad statement is reported, good ones still apply", () => {
    const statements = [tampered((s) => s.set("reason", "x")), revoke(gate)];
    const result = verifyWith(statements, {
      verdict: "UNTRUSTED",
      errors: [
        ["bad_revocation", `revocation signature invalid for '${gate.did}'`, null],
        ...gateRevoked(),
      ],
    });
    summaryKeys(result, { revocations_checked: 1 });
  });

  for (const [label, statement, exception] of [
    [
      "a truthy non-string sig value",
      tampered((s) => (s.get("sig") as JsonObject).set("value", 5)),
      "object of type 'int' has no len()",
    ],
    [
      "a float in a statement",
      tampered((s) => s.set("reason", new PyFloat(1.5))),
      "floats are not allowed in continuity receipts (v0)",
    ],
    [
      "a verified revoked_at in month 13",
      resigned(gate, { revoked_at: "2020-13-01T00:00:00Z" }),
      "month must be in 1..12",
    ],
    [
      "a verified revoked_at on February 30",
      resigned(gate, { revoked_at: "2021-02-30T00:00:00Z" }),
      "day is out of range for month",
    ],
    [
      "a verified revoked_at ending in a newline",
      resigned(gate, { revoked_at: "2020-01-01T00:00:00Z\n" }),
      "Invalid isoformat string: '2020-01-01T00:00:00+00:00\\n'",
    ],
    [
      "a verified revoked_at in non-ASCII digits",
      resigned(gate, { revoked_at: "\uff12\uff10\uff12\uff10-01-01T00:00:00Z" }),
      "Invalid isoformat string: '\uff12\uff10\uff12\uff10-01-01T00:00:00+00:00'",
    ],
  ] as const) {
    test(`bad_revocation: "revocations unusable" for ${label}, discarding every other statement result`, () => {
      const statements = [tampered((s) => s.set("reason", "x")), revoke(gate), statement];
      const result = verifyWith(statements, {
        verdict: "UNTRUSTED",
        errors: [["bad_revocation", `revocations unusable: ${exception}`, null]],
      });
      summaryKeys(result, {});
    });
  }

  test("a non-string sig value under an undecodable key is merely an invalid signature", () => {
    const statement = tampered((s) => {
      s.set("key", "did:key:zNotAKey");
      (s.get("sig") as JsonObject).set("value", 5);
    });
    rejected(statement, "revocation signature invalid for 'did:key:zNotAKey'");
  });
});
