/** The verification result (verifier.md §5): members and their order are the reference's. */
import type { JsonValue } from "../json/value.js";

export const VERDICTS = ["TRUSTED", "PROVISIONAL", "INSUFFICIENT_EVIDENCE", "UNTRUSTED"] as const;
export type Verdict = (typeof VERDICTS)[number];

/** The 30 codes `verify_bundle` emits plus the CLI's `bundle_too_large` (verifier.md §5.1). */
export type BundleErrorCode =
  | "malformed"
  | "nesting_too_deep"
  | "version_unsupported"
  | "too_many_receipts"
  | "bundle_too_large"
  | "task_mismatch"
  | "unknown_type"
  | "chain_break"
  | "bad_signature"
  | "policy_mismatch"
  | "cap_exceeded"
  | "delivery_before_settlement"
  | "missing_termination"
  | "offer_mismatch"
  | "offer_expired"
  | "offeree_mismatch"
  | "accept_before_offer"
  | "agreement_before_accept"
  | "agreement_issuer_mismatch"
  | "authority_before_grant"
  | "authority_agent_mismatch"
  | "authority_expired"
  | "redacted_required"
  | "commit_mismatch"
  | "bad_attestation"
  | "provenance_invalid"
  | "bad_revocation"
  | "key_revoked"
  | "anchor_invalid"
  | "head_mismatch"
  | "head_anchor_invalid";

export interface VerificationError {
  code: BundleErrorCode;
  detail: string;
  /** The raw `receipt_id` value the reference attaches (any JSON value, or null). */
  receipt_id: JsonValue;
}

/** Summary members in the order the reference writes them. */
export type Summary = Map<string, JsonValue>;

export interface VerifyResult {
  verdict: Verdict;
  errors: VerificationError[];
  provisional_reasons: string[];
  insufficient_reasons: string[];
  summary: Summary;
}

export function verdictFor(
  errors: readonly unknown[],
  provisional: readonly unknown[],
  insufficient: readonly unknown[],
): Verdict {
  if (errors.length > 0) return "UNTRUSTED";
  if (insufficient.length > 0) return "INSUFFICIENT_EVIDENCE";
  if (provisional.length > 0) return "PROVISIONAL";
  return "TRUSTED";
}
