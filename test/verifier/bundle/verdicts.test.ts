/**
 * Step M and §5 of verifier.md: the summary, the verdict, and the order of errors and
 * reasons across steps.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { recordDigest } from "../../../src/verifier/crypto/digest.js";
import type { JsonObject } from "../../../src/verifier/json/value.js";
import {
  attestDelivery,
  BundleBuilder,
  type BundleRecord,
  chainHeadFor,
  redact,
  signRevocationStatement,
  toJson,
} from "../../../src/verifier/producer/index.js";
import {
  acceptBody,
  agent,
  chain,
  counterparty,
  decisionBody,
  deliveryBody,
  digestOf,
  expectOutcome,
  gate,
  ISSUED_AT,
  record,
  signerFor,
  standardRecords,
  TASK_ID,
  V01,
  V02,
  V03,
  V04,
  V05,
  V06,
} from "./steps/fixtures.js";

const acceptRecord = (offer: JsonObject, overrides: Partial<BundleRecord> = {}): BundleRecord => ({
  type: "agreement.accept",
  body: acceptBody(offer),
  signer: agent,
  issuedAt: ISSUED_AT,
  receiptId: "accept",
  ...overrides,
});

describe("M. summary", () => {
  for (const spec of [V01, V02, V03, V04, V05, V06]) {
    test(`the standard task is TRUSTED under ${spec}, with the base summary in order`, () => {
      const result = expectOutcome(chain(spec, standardRecords()), { verdict: "TRUSTED" });
      assert.deepStrictEqual(
        [...result.summary.keys()],
        ["receipts", "types", "issuers", "terminated", "settled", "attestations"],
      );
      assert.deepStrictEqual(
        result.summary,
        toJson({
          receipts: 6,
          types: [
            "session.pass.created",
            "task.decision",
            "task.execution",
            "delivery.attestation",
            "settlement",
            "task.termination",
          ],
          issuers: [gate.did],
          terminated: true,
          settled: true,
          attestations: [
            { receipt_id: "delivery", counterparty: counterparty.did, attestation: "absent" },
          ],
        }),
      );
    });
  }

  test("receipts counts the raw list; types holds each object receipt's raw type", () => {
    const builder = new BundleBuilder(V01, TASK_ID);
    builder.append(record("pass"));
    builder.appendRaw("receipt");
    builder.append(record("decision", { envelope: { type: null } }));
    builder.append(record("execution", { envelope: { type: 5 } }));
    const result = expectOutcome(builder.build(), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt 1 is not an object", null],
        ["unknown_type", "type=None", "decision"],
        ["unknown_type", "type=5", "execution"],
        ["missing_termination", "task has no termination receipt", null],
      ],
    });
    assert.equal(result.summary.get("receipts"), 4);
    assert.deepStrictEqual(result.summary.get("types"), ["session.pass.created", null, 5]);
    assert.equal(result.summary.get("terminated"), false);
    assert.equal(result.summary.get("settled"), false);
  });

  test("issuers are distinct string ids sorted by code point (not UTF-16 unit)", () => {
    const records = [
      record("pass", { envelope: { issuer: { kind: "gate", id: "\u{1F600}" } } }),
      record("decision", { envelope: { issuer: { kind: "gate", id: "\uff01" } } }),
      record("execution", { envelope: { issuer: { kind: "gate", id: 7 } } }),
      record("termination", { envelope: { issuer: { kind: "gate", id: "\uff01" } } }),
    ];
    const result = expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: ["pass", "decision", "execution", "termination"].map(
        (rid) => ["bad_signature", "signature does not verify", rid] as const,
      ),
    });
    assert.deepStrictEqual(result.summary.get("issuers"), ["\uff01", "\u{1F600}"]);
  });

  test("the checks' summary members follow in the order the checks ran", () => {
    const builder = new BundleBuilder(V01, TASK_ID);
    for (const entry of standardRecords({
      delivery: { body: attestDelivery(deliveryBody, counterparty) },
    })) {
      builder.append(entry);
    }
    const last = (builder.build().get("receipts") as JsonObject[]).at(-1)!;
    const bundle = builder.build({
      anchors: [{ target: "termination", hash: recordDigest(last) }],
      revocations: [signRevocationStatement(agent, { revokedAt: ISSUED_AT })],
      chainHead: chainHeadFor(last, { type: "custom", proof_ref: "urn:proof" }),
    });
    const result = expectOutcome(bundle, { verdict: "TRUSTED" }, { externalRevocations: [] });
    assert.deepStrictEqual(
      [...result.summary.keys()],
      [
        "receipts",
        "types",
        "issuers",
        "terminated",
        "settled",
        "attestations",
        "revocations_checked",
        "revocations_external",
        "anchors",
        "chain_head",
      ],
    );
  });
});

describe("M. verdict", () => {
  const redacted = (options: { erase?: boolean }) =>
    redact(chain(V01, standardRecords()), "receipts[3].body.quality_flags", {
      signerFor,
      ...options,
    });

  test("PROVISIONAL when the only findings are provisional reasons", () => {
    expectOutcome(redacted({}), {
      verdict: "PROVISIONAL",
      provisional: ["redacted_without_disclosure:receipts[3].body.quality_flags"],
    });
  });

  test("INSUFFICIENT_EVIDENCE outranks PROVISIONAL", () => {
    expectOutcome(
      redacted({ erase: true }),
      {
        verdict: "INSUFFICIENT_EVIDENCE",
        provisional: ["anchor_missing"],
        insufficient: ["erased_content:receipts[3].body.quality_flags"],
      },
      { requireAnchor: true },
    );
  });

  test("UNTRUSTED outranks both, and the reasons are still reported", () => {
    const bundle = redacted({ erase: true });
    bundle.set("task_id", "urn:uuid:another-task");
    expectOutcome(
      bundle,
      {
        verdict: "UNTRUSTED",
        errors: ["pass", "decision", "execution", "delivery", "settlement", "termination"].map(
          (rid) => ["task_mismatch", "receipt task_id != bundle task_id", rid] as const,
        ),
        provisional: ["anchor_missing"],
        insufficient: ["erased_content:receipts[3].body.quality_flags"],
      },
      { requireAnchor: true },
    );
  });

  test("reason suffixes are Python str() of the receipt id (True, None)", () => {
    const builder = new BundleBuilder(V04, TASK_ID);
    builder.append(record("pass"));
    const offer = builder.append(record("offer"));
    const badRef = { body: { ...acceptBody(offer), offer_ref: digestOf("0") } };
    builder.append(acceptRecord(offer, { ...badRef, envelope: { receipt_id: true } }));
    builder.append(acceptRecord(offer, { ...badRef, envelope: { receipt_id: null } }));
    builder.append(record("termination"));
    expectOutcome(builder.build(), {
      verdict: "INSUFFICIENT_EVIDENCE",
      provisional: ["agreement_unreferenced:True", "agreement_unreferenced:None"],
      insufficient: ["missing_offer:True", "missing_offer:None"],
    });
  });
});

describe("§5 ordering across steps", () => {
  test("errors come in step order B, C, E, F, G, H, I, J, K, L, whatever the receipt order", () => {
    const builder = new BundleBuilder(V06, TASK_ID);
    builder.append(record("pass"));
    const offer = builder.append(record("offer"));
    builder.append(
      acceptRecord(offer, { body: { ...acceptBody(offer), terms_hash: digestOf("9") } }),
    );
    const grant = builder.append(record("grant"));
    builder.append(
      record("decision", {
        body: { ...decisionBody, policy_version: "other", authority_ref: recordDigest(grant) },
        envelope: { task_id: "urn:uuid:another-task" },
      }),
    );
    const tamperedAttestation = attestDelivery(deliveryBody, counterparty);
    tamperedAttestation.set("response_hash", digestOf("d"));
    builder.append(record("delivery", { body: tamperedAttestation }));
    builder.append(record("termination"));
    builder.appendRaw(null);

    const forgedStatement = signRevocationStatement(gate, { revokedAt: ISSUED_AT });
    forgedStatement.set("reason", "edited");
    const bundle = redact(
      builder.build({
        revocations: [forgedStatement],
        anchors: [{ target: "nobody", hash: digestOf("a") }],
        chainHead: { seq: 6, receipt_id: "termination", digest: digestOf("e") },
      }),
      "receipts[6].body.reason",
      { signerFor },
    );
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt 7 is not an object", null],
        ["task_mismatch", "receipt task_id != bundle task_id", "decision"],
        ["policy_mismatch", "decision policy 'other' != pass policy '2026-09-17.1'", "decision"],
        ["offer_mismatch", "accept does not match the referenced offer", "accept"],
        [
          "authority_agent_mismatch",
          `bound receipt issuer '${gate.did}' is not the grant's agent`,
          "decision",
        ],
        ["redacted_required", "required field redacted at receipts[6].body.reason", null],
        ["bad_attestation", "counterparty attestation does not verify", "delivery"],
        ["bad_revocation", `revocation signature invalid for '${gate.did}'`, null],
        ["anchor_invalid", "anchor invalid for nobody", null],
        ["head_mismatch", "chain_head does not match the final receipt", null],
      ],
      provisional: ["agreement_unreferenced:accept"],
    });
  });

  test("reasons come in class order: agreement, authority, redaction, anchor, head; offer, agreement, authority, erasure", () => {
    const builder = new BundleBuilder(V06, TASK_ID);
    builder.append(record("pass"));
    const offer = builder.append(record("offer"));
    builder.append(acceptRecord(offer));
    builder.append(
      acceptRecord(offer, {
        receiptId: "accept-2",
        body: { ...acceptBody(offer), offer_ref: digestOf("0") },
      }),
    );
    builder.append(record("grant"));
    builder.append(
      record("decision", {
        signer: agent,
        body: { ...decisionBody, agreement_ref: digestOf("1"), authority_ref: digestOf("2") },
      }),
    );
    builder.append(record("execution", { signer: agent }));
    builder.append(record("delivery"));
    builder.append(record("termination"));
    let bundle = redact(builder.build(), "receipts[7].body.quality_flags", {
      signerFor,
      erase: true,
    });
    bundle = redact(bundle, "receipts[8].issuer.kind", { signerFor });
    const last = (bundle.get("receipts") as JsonObject[]).at(-1)!;
    bundle.set("chain_head", chainHeadFor(last));
    expectOutcome(
      bundle,
      {
        verdict: "INSUFFICIENT_EVIDENCE",
        provisional: [
          "agreement_unreferenced:accept",
          "agreement_unreferenced:accept-2",
          "missing_agreement_ref:execution",
          "authority_unreferenced:grant",
          "redacted_without_disclosure:receipts[8].issuer.kind",
          "anchor_missing",
          "head_anchor_missing",
        ],
        insufficient: [
          "missing_offer:accept-2",
          "missing_agreement:decision",
          "missing_authority:decision",
          "erased_content:receipts[7].body.quality_flags",
        ],
      },
      { requireAnchor: true },
    );
  });
});
