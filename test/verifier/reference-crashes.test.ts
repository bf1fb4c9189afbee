/**
 * Inputs that make the Python reference raise instead of answering (verifier.md §11.3).
 * Our policy: `verifyBundle` never throws; verification stops where the reference would
 * have crashed and the bundle is UNTRUSTED, with a `malformed` error naming the cause after
 * whatever was already found. Where the reference itself catches the exception (a verified
 * revocation statement's `revoked_at`), we answer exactly as it does.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { recordDigest } from "../../src/verifier/crypto/digest.js";
import { type JsonObject, PyFloat } from "../../src/verifier/json/value.js";
import {
  BundleBuilder,
  type BundleRecord,
  signReceipt,
  signRevocationStatement,
  toJson,
} from "../../src/verifier/producer/index.js";
import { pyRepr } from "../../src/verifier/py/repr.js";
import {
  acceptBody,
  agent,
  chain,
  decisionBody,
  digestOf,
  type ErrorRow,
  expectOutcome,
  gate,
  grantBody,
  ISSUED_AT,
  offerBody,
  passBody,
  record,
  setInBody,
  standardRecords,
  TASK_ID,
  V01,
  V04,
  V06,
} from "./bundle/steps/fixtures.js";

/** Timestamps that pass the reference's pattern but that `datetime.fromisoformat` rejects. */
const NOT_REAL_INSTANTS = [
  { label: "month 13", timestamp: "2026-13-23T20:38:57Z", python: "month must be in 1..12" },
  {
    label: "February 30",
    timestamp: "2026-02-30T20:38:57Z",
    python: "day is out of range for month",
  },
  {
    label: "a trailing newline",
    timestamp: "2026-09-23T20:38:57Z\n",
    python: "Invalid isoformat string: '2026-09-23T20:38:57+00:00\\n'",
  },
  {
    label: "Arabic-Indic digits",
    timestamp: "\u0662\u0660\u0662\u0666-09-23T20:38:57Z",
    python: "Invalid isoformat string: '\u0662\u0660\u0662\u0666-09-23T20:38:57+00:00'",
  },
] as const;

const crashed = (timestamp: string): ErrorRow => [
  "malformed",
  `timestamp is not a real UTC instant: ${pyRepr(timestamp)}`,
  null,
];

const acceptRecord = (offer: JsonObject, overrides: Partial<BundleRecord> = {}): BundleRecord => ({
  type: "agreement.accept",
  body: acceptBody(offer),
  signer: agent,
  issuedAt: ISSUED_AT,
  receiptId: "accept",
  ...overrides,
});

interface AgreementPlacement {
  offer?: Partial<BundleRecord>;
  accept?: Partial<BundleRecord>;
  decision?: Partial<BundleRecord>;
}

/** A 0.4 agreement chain (pass, offer, accept, bound decision, termination). */
function agreementWith(placement: AgreementPlacement): JsonObject {
  const builder = new BundleBuilder(V04, TASK_ID);
  builder.append(record("pass"));
  const offer = builder.append(record("offer", placement.offer));
  const accept = builder.append(acceptRecord(offer, placement.accept));
  builder.append(
    record("decision", {
      signer: agent,
      body: { ...decisionBody, agreement_ref: recordDigest(accept) },
      ...placement.decision,
    }),
  );
  builder.append(record("termination"));
  return builder.build();
}

interface AuthorityPlacement {
  grant?: Partial<BundleRecord>;
  decision?: Partial<BundleRecord>;
}

/** A 0.6 chain (pass, grant, decision citing the grant, termination). */
function authorityWith(placement: AuthorityPlacement): JsonObject {
  const builder = new BundleBuilder(V06, TASK_ID);
  builder.append(record("pass"));
  const grant = builder.append(record("grant", placement.grant));
  builder.append(
    record("decision", {
      signer: agent,
      body: { ...decisionBody, authority_ref: recordDigest(grant) },
      ...placement.decision,
    }),
  );
  builder.append(record("termination"));
  return builder.build();
}

interface Place {
  /** Where the timestamp gets parsed. */
  place: string;
  /** A bundle with `timestamp` in that place. */
  build: (timestamp: string) => JsonObject;
  /** What is found before verification stops. */
  before?: readonly ErrorRow[];
}

const PLACES: readonly Place[] = [
  {
    place: "an offer's valid_until (step F, offer expiry)",
    build: (t) => agreementWith({ offer: { body: { ...offerBody, valid_until: t } } }),
  },
  {
    place: "an accept's issued_at (step F, offer expiry)",
    build: (t) => agreementWith({ accept: { issuedAt: t } }),
  },
  {
    place: "an offer's issued_at (step F, accept before offer)",
    build: (t) => agreementWith({ offer: { issuedAt: t } }),
  },
  {
    place: "a bound record's issued_at (step F, agreement before accept)",
    build: (t) => agreementWith({ decision: { issuedAt: t } }),
  },
  {
    place: "a grant's granted_at (step G, effective time)",
    build: (t) =>
      authorityWith({ grant: { body: { ...grantBody, granted_at: t, expires_at: null } } }),
  },
  {
    place: "a grant receipt's issued_at (step G, effective time)",
    build: (t) => authorityWith({ grant: { issuedAt: t } }),
  },
  {
    place: "the issued_at of a record citing a grant (step G)",
    build: (t) => authorityWith({ decision: { issuedAt: t } }),
  },
  {
    place: "a grant's expires_at when granted_at is unusable (step G, authority window)",
    build: (t) =>
      authorityWith({ grant: { body: { ...grantBody, granted_at: "soon", expires_at: t } } }),
    before: [["malformed", "granted_at must be RFC 3339 UTC", "grant"]],
  },
  {
    // The anchor entry would be anchor_invalid if step K ran after the crash.
    place: "any receipt's issued_at (step J4, even without statements)",
    build: (t) =>
      chain(V01, standardRecords({ termination: { issuedAt: t } }), {
        anchors: [{ target: "nobody", hash: digestOf("a") }],
      }),
  },
];

describe("REF-CRASH: a timestamp that matches the pattern but is not a real instant", () => {
  for (const { label, timestamp, python } of NOT_REAL_INSTANTS) {
    for (const { place, build, before = [] } of PLACES) {
      test(`${label} in ${place} stops verification with malformed`, () => {
        expectOutcome(build(timestamp), {
          verdict: "UNTRUSTED",
          errors: [...before, crashed(timestamp)],
        });
      });
    }

    test(`${label} in a grant's expires_at stops the per-receipt pass itself (step C6)`, () => {
      // The pass's task mismatch comes first; the termination's, after the crash, never comes.
      const builder = new BundleBuilder(V06, TASK_ID);
      const otherTask = { envelope: { task_id: "urn:uuid:another-task" } };
      builder.append(record("pass", otherTask));
      builder.append(record("grant", { body: { ...grantBody, expires_at: timestamp } }));
      builder.append(record("termination", otherTask));
      const result = expectOutcome(builder.build(), {
        verdict: "UNTRUSTED",
        errors: [
          ["task_mismatch", "receipt task_id != bundle task_id", "pass"],
          crashed(timestamp),
        ],
      });
      assert.deepStrictEqual(result.summary.get("types"), [
        "session.pass.created",
        "authority.grant",
        "task.termination",
      ]);
    });

    test(`${label} in a verified statement's revoked_at is the reference's own bad_revocation`, () => {
      const statement = signRevocationStatement(gate, { revokedAt: "2020-01-01T00:00:00Z" });
      statement.set("revoked_at", timestamp);
      const bundle = chain(V01, standardRecords(), {
        revocations: [signReceipt(statement, gate)],
        anchors: [{ target: "nobody", hash: digestOf("a") }],
      });
      const result = expectOutcome(bundle, {
        verdict: "UNTRUSTED",
        errors: [
          ["bad_revocation", `revocations unusable: ${python}`, null],
          ["anchor_invalid", "anchor invalid for nobody", null],
        ],
      });
      assert.equal(result.summary.has("revocations_checked"), false);
    });
  }
});

describe("REF-CRASH: settlement.amount.minor is infinite", () => {
  for (const infinity of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    test(`minor ${infinity} under a spend cap stops verification at the cap check`, () => {
      const amount = toJson({ minor: new PyFloat(infinity), currency: "USD" });
      const bundle = chain(
        V01,
        standardRecords({ settlement: { tamper: setInBody("amount", amount) } }),
      );
      const result = expectOutcome(bundle, {
        verdict: "UNTRUSTED",
        errors: [
          ["malformed", "receipt is not canonically encodable (floats are rejected)", "settlement"],
          ["bad_signature", "receipt is not canonically encodable", "settlement"],
          ["chain_break", "prev digest mismatch", "termination"],
          ["malformed", "settlement amount is not numeric (infinite)", null],
        ],
      });
      assert.equal(result.summary.has("attestations"), false);
    });
  }

  test("without a spend cap int() is never called, so an infinite minor does not crash", () => {
    const amount = toJson({ minor: new PyFloat(Number.POSITIVE_INFINITY), currency: "USD" });
    const records = standardRecords({
      pass: { body: { ...passBody, spend_cap: null } },
      settlement: { tamper: setInBody("amount", amount) },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "settlement"],
        ["bad_signature", "receipt is not canonically encodable", "settlement"],
        ["chain_break", "prev digest mismatch", "termination"],
      ],
    });
  });
});
