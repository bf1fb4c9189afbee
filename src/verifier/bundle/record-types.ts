/** Record types, their required body fields and spec gating (verifier.md §3.2). */
export const SUPPORTED_SPECS = [
  "continuity-receipt/0.1",
  "continuity-receipt/0.2",
  "continuity-receipt/0.3",
  "continuity-receipt/0.4",
  "continuity-receipt/0.5",
  "continuity-receipt/0.6",
] as const;

const SUPPORTED = new Set<unknown>(SUPPORTED_SPECS);
export const isSupportedSpec = (spec: unknown): boolean => SUPPORTED.has(spec);

/** Specs whose receipts carry agreement bindings (`offeree`, `agreement_ref`). */
export const isAgreementSpec = (spec: unknown): boolean =>
  spec === "continuity-receipt/0.4" ||
  spec === "continuity-receipt/0.5" ||
  spec === "continuity-receipt/0.6";

/** Specs with the 0.5 body vocabulary (and `state.commitment`). */
export const isVocabularySpec = (spec: unknown): boolean =>
  spec === "continuity-receipt/0.5" || spec === "continuity-receipt/0.6";

export const isAuthoritySpec = (spec: unknown): boolean => spec === "continuity-receipt/0.6";

/** The base table: `redacted_required` uses it as is (no spec-specific additions). */
export const REQUIRED_FIELDS: ReadonlyMap<string, readonly string[]> = new Map([
  [
    "session.pass.created",
    [
      "gate_id",
      "mandala_class",
      "quotas",
      "expires_at",
      "policy_version",
      "mandate_ref",
      "agent_id",
    ],
  ],
  [
    "task.decision",
    ["action", "action_args_hash", "model", "input_provenance", "decision", "policy_version"],
  ],
  ["task.execution", ["tool_calls", "egress", "resources", "sandbox_class"]],
  ["delivery.attestation", ["request_hash", "response_hash", "counterparty"]],
  ["task.termination", ["reason", "limits_at_stop", "remaining"]],
  ["settlement", ["rail", "rail_ref", "amount", "gated_on_delivery", "settled_at"]],
  ["authority.succession", ["from_authority", "to_authority", "effective_at", "reason"]],
  ["agreement.offer", ["offer_id", "offeree", "terms_hash", "valid_until", "nonce"]],
  ["agreement.accept", ["offer_ref", "offer_id", "terms_hash"]],
  ["state.commitment", ["state_kind", "scope", "count", "head_digest"]],
  ["authority.grant", ["grant_id", "principal", "agent", "scope", "granted_at"]],
]);

/** Records that may carry `agreement_ref` / `authority_ref`. */
export const BOUND_TYPES = new Set<unknown>([
  "task.decision",
  "task.execution",
  "delivery.attestation",
  "settlement",
]);

/** `unknown_type` decision: the type must exist and be allowed under the receipt's own spec. */
export function isKnownType(type: unknown, spec: unknown): type is string {
  if (typeof type !== "string" || !REQUIRED_FIELDS.has(type)) return false;
  if (type === "state.commitment") return isVocabularySpec(spec);
  if (type === "authority.grant") return isAuthoritySpec(spec);
  return true;
}

/** Required fields for a receipt: 0.4+ accepts also require `offeree`. */
export function requiredFields(type: string, spec: unknown): readonly string[] {
  const base = REQUIRED_FIELDS.get(type) ?? [];
  if (type === "agreement.accept" && isAgreementSpec(spec)) return [...base, "offeree"];
  return base;
}

export const ANCHOR_TYPES = new Set<unknown>(["opentimestamps", "public-chain", "custom"]);
