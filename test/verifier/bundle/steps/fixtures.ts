/**
 * Shared material for the rule tests: deterministic signers, bodies shaped like the
 * corpus bundles, and an assertion that compares a whole verification outcome at once
 * (verdict, every error with its detail and receipt_id in order, both reason lists).
 */
import assert from "node:assert/strict";
import type { Verdict, VerifyResult } from "../../../../src/verifier/bundle/result.js";
import { type VerifyOptions, verifyBundle } from "../../../../src/verifier/bundle/verify-bundle.js";
import { recordDigest } from "../../../../src/verifier/crypto/digest.js";
import { type Ed25519Signer, signerFromSeed } from "../../../../src/verifier/crypto/ed25519.js";
import type { JsonObject, JsonValue } from "../../../../src/verifier/json/value.js";
import {
  BundleBuilder,
  type BundleExtras,
  type BundleRecord,
  type JsonInput,
  signersByDid,
} from "../../../../src/verifier/producer/index.js";

export const V01 = "continuity-receipt/0.1";
export const V02 = "continuity-receipt/0.2";
export const V03 = "continuity-receipt/0.3";
export const V04 = "continuity-receipt/0.4";
export const V05 = "continuity-receipt/0.5";
export const V06 = "continuity-receipt/0.6";

const seeded = (byte: number): Ed25519Signer => signerFromSeed(new Uint8Array(32).fill(byte));
/** Issues the pass and most records, like the corpus's gate key. */
export const gate = seeded(1);
/** The offeree of agreements and the agent of authority grants. */
export const agent = seeded(2);
/** Attests deliveries. */
export const counterparty = seeded(3);
/** A key nobody expects. */
export const stranger = seeded(4);
export const signerFor = signersByDid([gate, agent, counterparty, stranger]);

export const TASK_ID = "urn:uuid:01a0cffe-3173-751b-854c-d2b6a9f20a56";
export const ISSUED_AT = "2026-09-23T20:38:57Z";
export const LATER = "2026-09-23T21:00:00Z";
export const EARLIER = "2026-09-23T20:00:00Z";
const POLICY = "2026-09-17.1";
export const digestOf = (hexDigit: string): string => `sha256:${hexDigit.repeat(64)}`;

type PlainBody = Record<string, JsonInput>;

export const passBody: PlainBody = {
  gate_id: "gate-lite-1",
  mandala_class: "gate-lite",
  quotas: { cpu_ms: 300000, mem_mb: 1024, disk_mb: 512, wall_ms: 300000 },
  expires_at: "2026-09-24T00:00:00Z",
  policy_version: POLICY,
  mandate_ref: digestOf("2"),
  agent_id: agent.did,
  spend_cap: { minor: 1000, currency: "USD" },
};
export const decisionBody: PlainBody = {
  action: "memory.search",
  action_args_hash: digestOf("f"),
  model: { provider: "local", id: "wm-recall" },
  input_provenance: {
    policy_id: "egress.default",
    allowed_sources: ["gate"],
    observed_sources_hash: digestOf("3"),
  },
  decision: "allow",
  policy_version: POLICY,
};
export const executionBody: PlainBody = {
  tool_calls: [{ name: "memory.search", args_hash: digestOf("f"), result_hash: digestOf("2") }],
  egress: [{ destination: "none", bytes: 0, allowed: true }],
  resources: { cpu_ms: 1200, mem_peak_mb: 48, disk_peak_mb: 8 },
  sandbox_class: "bwrap-landlock",
};
export const deliveryBody: PlainBody = {
  request_hash: digestOf("6"),
  response_hash: digestOf("c"),
  counterparty: { id: counterparty.did },
  quality_flags: ["quality-ok"],
};
export const settlementBody: PlainBody = {
  rail: "invoice",
  rail_ref: "inv-0001",
  amount: { minor: 200, currency: "USD" },
  gated_on_delivery: true,
  settled_at: "2026-09-23T21:10:00Z",
};
export const terminationBody: PlainBody = {
  reason: "completed",
  limits_at_stop: { cpu_ms: 300000, wall_ms: 300000, spend_minor: 1000, currency: "USD" },
  remaining: { cpu_ms: 298800, wall_ms: 299000, spend_minor: 800, currency: "USD" },
};
export const offerBody: PlainBody = {
  offer_id: "offer-1",
  offeree: agent.did,
  terms_hash: digestOf("5"),
  valid_until: "2030-01-01T00:00:00Z",
  nonce: "nonce-offer-1",
};
export const stateCommitmentBody: PlainBody = {
  state_kind: "chain-head",
  scope: "local:test-store",
  count: 3,
  head_digest: digestOf("1"),
  merkle_root: `merkle-sha256:${"2".repeat(64)}`,
};
export const grantBody: PlainBody = {
  grant_id: "urn:uuid:00000000-0000-7000-8000-000000000024",
  principal: { id: "did:web:lab.example", assurance: "self_asserted" },
  agent: agent.did,
  scope: ["memory.read", "receipts.emit"],
  granted_at: EARLIER,
  review_policy: "none",
  constraints: { "memory.read": { max_rows: 100 } },
  policy_ref: digestOf("1"),
  gate_ref: "urn:local:gate-pass:0001",
  expires_at: "2026-09-24T00:00:00Z",
};
const successionBody: PlainBody = {
  from_authority: gate.did,
  to_authority: agent.did,
  effective_at: ISSUED_AT,
  reason: "handoff",
};

/** An accept of `offer` (by digest), issued by its offeree. */
export function acceptBody(offer: JsonObject, offeree: JsonInput = agent.did): PlainBody {
  return {
    offer_ref: recordDigest(offer),
    offer_id: "offer-1",
    terms_hash: digestOf("5"),
    offeree,
  };
}

/** `body` without the named members. */
export function without(body: PlainBody, ...names: string[]): PlainBody {
  return Object.fromEntries(Object.entries(body).filter(([name]) => !names.includes(name)));
}

const RECORDS = {
  pass: ["session.pass.created", passBody],
  decision: ["task.decision", decisionBody],
  execution: ["task.execution", executionBody],
  delivery: ["delivery.attestation", deliveryBody],
  settlement: ["settlement", settlementBody],
  termination: ["task.termination", terminationBody],
  offer: ["agreement.offer", offerBody],
  state: ["state.commitment", stateCommitmentBody],
  grant: ["authority.grant", grantBody],
  succession: ["authority.succession", successionBody],
} as const satisfies Record<string, readonly [string, PlainBody]>;

export type RecordName = keyof typeof RECORDS;

/** A gate-issued record whose receipt id is its name, with overrides. */
export function record(name: RecordName, overrides: Partial<BundleRecord> = {}): BundleRecord {
  const [type, body] = RECORDS[name];
  return {
    type,
    body,
    signer: gate,
    issuerKind: "gate",
    issuedAt: ISSUED_AT,
    receiptId: name,
    ...overrides,
  };
}

export type StandardStep =
  | "pass"
  | "decision"
  | "execution"
  | "delivery"
  | "settlement"
  | "termination";
const STANDARD_STEPS: readonly StandardStep[] = [
  "pass",
  "decision",
  "execution",
  "delivery",
  "settlement",
  "termination",
];

/**
 * The six records of the corpus's happy task (02_happy_full): pass, decision, execution,
 * delivery, gated settlement under a 1000 USD cap, termination.
 */
export function standardRecords(
  edits: Partial<Record<StandardStep, Partial<BundleRecord>>> = {},
): BundleRecord[] {
  return STANDARD_STEPS.map((step) => record(step, edits[step]));
}

export function builderOf(
  spec: string,
  records: readonly BundleRecord[],
  taskId: JsonInput = TASK_ID,
): BundleBuilder {
  const builder = new BundleBuilder(spec, taskId);
  for (const entry of records) builder.append(entry);
  return builder;
}

export function chain(
  spec: string,
  records: readonly BundleRecord[],
  extras: BundleExtras = {},
): JsonObject {
  return builderOf(spec, records).build(extras);
}

export type ErrorRow = readonly [code: string, detail: string, receiptId: JsonValue];

export interface Outcome {
  verdict: Verdict;
  errors?: readonly ErrorRow[];
  provisional?: readonly string[];
  insufficient?: readonly string[];
}

/** Verifies `bundle` and asserts the whole outcome; returns the result for summary checks. */
export function expectOutcome(
  bundle: JsonValue,
  expected: Outcome,
  options: VerifyOptions = {},
): VerifyResult {
  const result = verifyBundle(bundle, options);
  assert.deepStrictEqual(
    {
      verdict: result.verdict,
      errors: result.errors.map((e) => [e.code, e.detail, e.receipt_id]),
      provisional: result.provisional_reasons,
      insufficient: result.insufficient_reasons,
    },
    {
      verdict: expected.verdict,
      errors: expected.errors ?? [],
      provisional: expected.provisional ?? [],
      insufficient: expected.insufficient ?? [],
    },
  );
  return result;
}

/** A `tamper` hook that sets a body member after signing. */
export function setInBody(name: string, value: JsonValue): (receipt: JsonObject) => void {
  return (receipt) => {
    (receipt.get("body") as JsonObject).set(name, value);
  };
}
