/**
 * 0.6 authority grants: their body rules (step C6, verifier.md §3.3) and the records that
 * cite them through `authority_ref` (step G).
 */
import { describe, test } from "node:test";
import { recordDigest } from "../../../../src/verifier/crypto/digest.js";
import type { JsonObject } from "../../../../src/verifier/json/value.js";
import {
  BundleBuilder,
  type BundleRecord,
  type JsonInput,
} from "../../../../src/verifier/producer/index.js";
import {
  agent,
  chain,
  decisionBody,
  digestOf,
  EARLIER,
  expectOutcome,
  gate,
  grantBody,
  ISSUED_AT,
  LATER,
  record,
  TASK_ID,
  V05,
  V06,
  without,
} from "./fixtures.js";

interface AuthorityEdits {
  grant?: Partial<BundleRecord>;
  /** The decision citing the grant; by default issued by the grant's agent with `authority_ref`. */
  decision?: (grant: JsonObject) => Partial<BundleRecord>;
}

/** A 0.6 chain: pass, grant (to `agent`), a decision citing the grant, termination. */
function authority(edits: AuthorityEdits = {}): JsonObject {
  const builder = new BundleBuilder(V06, TASK_ID);
  builder.append(record("pass"));
  const grant = builder.append(record("grant", edits.grant));
  builder.append(
    record("decision", {
      signer: agent,
      body: { ...decisionBody, authority_ref: recordDigest(grant) },
      ...edits.decision?.(grant),
    }),
  );
  builder.append(record("termination"));
  return builder.build();
}

const HALF_PAST = "2026-09-23T20:30:00Z";

describe("G. records citing an authority grant", () => {
  test("a record within its grant's window, issued by the grant's agent, is TRUSTED", () => {
    expectOutcome(authority(), { verdict: "TRUSTED" });
  });

  for (const [label, ref] of [
    ["an unknown digest", digestOf("0")],
    ["a non-string", 7],
  ] as const) {
    test(`missing_authority: an authority_ref that is ${label} (vector 24b)`, () => {
      const bundle = authority({
        decision: () => ({ body: { ...decisionBody, authority_ref: ref } }),
      });
      expectOutcome(bundle, {
        verdict: "INSUFFICIENT_EVIDENCE",
        provisional: ["authority_unreferenced:grant"],
        insufficient: ["missing_authority:decision"],
      });
    });
  }

  test("authority_unreferenced: a grant no record cites (vector 24f)", () => {
    expectOutcome(authority({ decision: () => ({ body: decisionBody }) }), {
      verdict: "PROVISIONAL",
      provisional: ["authority_unreferenced:grant"],
    });
  });

  test("authority_ref is read only on records whose spec is exactly 0.6", () => {
    const bundle = authority({
      decision: () => ({ spec: V05, body: { ...decisionBody, authority_ref: digestOf("0") } }),
    });
    expectOutcome(bundle, {
      verdict: "PROVISIONAL",
      provisional: ["authority_unreferenced:grant"],
    });
  });

  test("a grant that is unknown_type under its own spec still resolves authority_ref (vector 24g)", () => {
    expectOutcome(authority({ grant: { spec: V05 } }), {
      verdict: "UNTRUSTED",
      errors: [
        ["unknown_type", "type='authority.grant'", "grant"],
        ["chain_break", "prev digest mismatch", "decision"],
      ],
    });
  });

  test("authority_before_grant: a record issued before the grant receipt (vector 24c)", () => {
    expectOutcome(authority({ grant: { issuedAt: LATER } }), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "authority_before_grant",
          "bound receipt issued before its authority grant grant",
          "decision",
        ],
      ],
    });
  });

  test("authority_before_grant: a granted_at later than the grant's issued_at takes effect", () => {
    const bundle = authority({
      grant: { issuedAt: EARLIER, body: { ...grantBody, granted_at: LATER, expires_at: null } },
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        [
          "authority_before_grant",
          "bound receipt issued before its authority grant grant",
          "decision",
        ],
      ],
    });
  });

  test("authority_before_grant: a valid granted_at takes effect when the grant's issued_at is invalid", () => {
    const bundle = authority({
      grant: { issuedAt: "soon", body: { ...grantBody, granted_at: LATER, expires_at: null } },
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "issued_at not RFC 3339 UTC: 'soon'", "grant"],
        [
          "authority_before_grant",
          "bound receipt issued before its authority grant grant",
          "decision",
        ],
      ],
    });
  });

  test("authority_agent_mismatch: a record not issued by the grant's agent (vector 24e)", () => {
    expectOutcome(authority({ decision: () => ({ signer: gate }) }), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "authority_agent_mismatch",
          `bound receipt issuer '${gate.did}' is not the grant's agent`,
          "decision",
        ],
      ],
    });
  });

  test("authority_expired: a record issued after expires_at (vector 24d); exactly at it is in time", () => {
    const expiring = (expiresAt: string) =>
      authority({ grant: { body: { ...grantBody, expires_at: expiresAt } } });
    expectOutcome(expiring(HALF_PAST), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "authority_expired",
          `bound receipt issued after the authority window ${HALF_PAST}`,
          "decision",
        ],
      ],
    });
    expectOutcome(expiring(ISSUED_AT), { verdict: "TRUSTED" });
  });

  test("one record can break all three grant rules, reported in rule order", () => {
    const bundle = authority({
      grant: { issuedAt: LATER, body: { ...grantBody, expires_at: HALF_PAST } },
      decision: () => ({ signer: gate }),
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        [
          "authority_before_grant",
          "bound receipt issued before its authority grant grant",
          "decision",
        ],
        [
          "authority_agent_mismatch",
          `bound receipt issuer '${gate.did}' is not the grant's agent`,
          "decision",
        ],
        [
          "authority_expired",
          `bound receipt issued after the authority window ${HALF_PAST}`,
          "decision",
        ],
      ],
    });
  });
});

describe("C6. authority.grant body rules (0.6)", () => {
  const grantOnly = (body: Record<string, JsonInput>) =>
    chain(V06, [record("pass"), record("grant", { body }), record("termination")]);

  test("optional members may be null or absent", () => {
    const nulls = {
      ...grantBody,
      expires_at: null,
      review_policy: null,
      constraints: null,
      policy_ref: null,
      gate_ref: null,
    };
    const minimal = without(
      grantBody,
      "expires_at",
      "review_policy",
      "constraints",
      "policy_ref",
      "gate_ref",
    );
    for (const body of [nulls, minimal]) {
      expectOutcome(grantOnly(body), {
        verdict: "PROVISIONAL",
        provisional: ["authority_unreferenced:grant"],
      });
    }
  });

  test("malformed: every grant problem is reported, in field order", () => {
    const body = {
      grant_id: "",
      principal: { id: "did:web:lab.example" },
      agent: "",
      scope: [],
      granted_at: "now",
      expires_at: "never",
      review_policy: "some",
      constraints: ["memory.read"],
      policy_ref: "sha256:abc",
      gate_ref: "",
    };
    expectOutcome(grantOnly(body), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "grant_id must be nonempty text", "grant"],
        [
          "malformed",
          "principal must name an id and an assurance of self_asserted or issuer_verified",
          "grant",
        ],
        ["malformed", "agent must be nonempty text", "grant"],
        ["malformed", "scope must be a nonempty list of nonempty strings", "grant"],
        ["malformed", "granted_at must be RFC 3339 UTC", "grant"],
        ["malformed", "expires_at must be RFC 3339 UTC", "grant"],
        ["malformed", "review_policy must be none, flagged, or full", "grant"],
        ["malformed", "constraints must be an object", "grant"],
        ["malformed", "policy_ref must be a sha256 digest", "grant"],
        ["malformed", "gate_ref must be nonempty text", "grant"],
      ],
      provisional: ["authority_unreferenced:grant"],
    });
  });

  for (const [label, principal] of [
    ["an unknown assurance (vector 24i)", { id: "did:web:lab.example", assurance: "notarised" }],
    ["an empty id", { id: "", assurance: "self_asserted" }],
    ["a string", "did:web:lab.example"],
  ] as const) {
    test(`malformed: a principal with ${label}`, () => {
      expectOutcome(grantOnly({ ...grantBody, principal }), {
        verdict: "UNTRUSTED",
        errors: [
          [
            "malformed",
            "principal must name an id and an assurance of self_asserted or issuer_verified",
            "grant",
          ],
        ],
        provisional: ["authority_unreferenced:grant"],
      });
    });
  }

  for (const [label, scope] of [
    ["a string (state.commitment's scope is one, a grant's is not)", "memory.read"],
    ["an empty string inside (vector 24j)", ["memory.read", ""]],
  ] as const) {
    test(`malformed: a scope that is ${label}`, () => {
      expectOutcome(grantOnly({ ...grantBody, scope }), {
        verdict: "UNTRUSTED",
        errors: [["malformed", "scope must be a nonempty list of nonempty strings", "grant"]],
        provisional: ["authority_unreferenced:grant"],
      });
    });
  }

  test("malformed: expires_at must be strictly later than granted_at", () => {
    expectOutcome(grantOnly({ ...grantBody, expires_at: EARLIER }), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "expires_at must be later than granted_at", "grant"]],
      provisional: ["authority_unreferenced:grant"],
    });
  });

  test("the expires_at order is not checked when granted_at is invalid", () => {
    expectOutcome(grantOnly({ ...grantBody, granted_at: "now", expires_at: EARLIER }), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "granted_at must be RFC 3339 UTC", "grant"]],
      provisional: ["authority_unreferenced:grant"],
    });
  });
});
