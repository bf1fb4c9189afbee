/**
 * The `checks` of a validation (service.md §5): booleans read off the actual verification
 * result — its error codes, reasons and summary — never guessed and never null. A bundle that
 * stops at an early exit (not an object, too deep, unsupported spec, no receipts, too many)
 * had none of its receipts examined, so every check but `task_bound` is false for it.
 *
 * - `task_bound`: the request's task_hash binds to the bundle (binding.ts);
 * - `chain_intact`: every receipt is an object and no `chain_break`, `task_mismatch` or
 *   `head_mismatch` was found: the receipts link by `prev`, in `seq` order, for one task;
 * - `signatures_valid`: no `bad_signature`, `bad_attestation`, `bad_revocation` or
 *   `key_revoked`: every receipt signature, counterparty attestation and revocation statement
 *   verifies, under keys not revoked when they signed;
 * - `termination_present`: the summary's `terminated` (a `task.termination` receipt exists);
 * - `caps_respected`: a `session.pass.created` receipt exists (so caps were checked), no
 *   `cap_exceeded`, and no settlement amount or pass `spend_cap` was unusable (`malformed`);
 * - `agreements_bound`: no agreement or authority error (offer/accept mismatches, expiry,
 *   offeree, ordering, bound issuer, grant window and agent) and no agreement or authority
 *   reason (`missing_offer`, `missing_agreement`, `agreement_unreferenced`,
 *   `missing_agreement_ref`, `missing_authority`, `authority_unreferenced`); true when the
 *   bundle has no agreements at all;
 * - `anchors_present`: the bundle carries anchors and none is invalid, or its `chain_head`
 *   is anchored with a valid entry.
 */
import type { BundleErrorCode, VerifyResult } from "../verifier/bundle/result.js";

export interface ValidationChecks {
  task_bound: boolean;
  chain_intact: boolean;
  signatures_valid: boolean;
  termination_present: boolean;
  caps_respected: boolean;
  agreements_bound: boolean;
  anchors_present: boolean;
}

const CHAIN_CODES = new Set<BundleErrorCode>(["chain_break", "task_mismatch", "head_mismatch"]);
const SIGNATURE_CODES = new Set<BundleErrorCode>([
  "bad_signature",
  "bad_attestation",
  "bad_revocation",
  "key_revoked",
]);
const AGREEMENT_CODES = new Set<BundleErrorCode>([
  "offer_mismatch",
  "offer_expired",
  "offeree_mismatch",
  "accept_before_offer",
  "agreement_before_accept",
  "agreement_issuer_mismatch",
  "authority_before_grant",
  "authority_agent_mismatch",
  "authority_expired",
]);
const AGREEMENT_REASONS = [
  "missing_offer:",
  "missing_agreement:",
  "agreement_unreferenced:",
  "missing_agreement_ref:",
  "missing_authority:",
  "authority_unreferenced:",
];
/** `malformed` details (verifier.md §4 E4/E5, F4/F8) that mean a cap or an agreement was unusable. */
const CAP_MALFORMED = ["settlement amount", "pass spend_cap"];
const AGREEMENT_MALFORMED = ["offer valid_until", "accept offeree"];

export function validationChecks(result: VerifyResult, taskBound: boolean): ValidationChecks {
  const { errors, summary } = result;
  // Early exits leave the summary empty: no receipt was examined.
  const examined = summary.size > 0;
  const has = (codes: Set<BundleErrorCode>) => errors.some((e) => codes.has(e.code));
  const malformed = (prefixes: string[]) =>
    errors.some((e) => e.code === "malformed" && prefixes.some((p) => e.detail.startsWith(p)));
  const types = summary.get("types");
  const typeList = Array.isArray(types) ? types : [];
  const reasons = [...result.provisional_reasons, ...result.insufficient_reasons];
  const anchors = summary.get("anchors");
  return {
    task_bound: taskBound,
    chain_intact: examined && typeList.length === summary.get("receipts") && !has(CHAIN_CODES),
    signatures_valid: examined && !has(SIGNATURE_CODES),
    termination_present: summary.get("terminated") === true,
    caps_respected:
      examined &&
      typeList.includes("session.pass.created") &&
      !errors.some((e) => e.code === "cap_exceeded") &&
      !malformed(CAP_MALFORMED),
    agreements_bound:
      examined &&
      !has(AGREEMENT_CODES) &&
      !malformed(AGREEMENT_MALFORMED) &&
      !reasons.some((reason) => AGREEMENT_REASONS.some((p) => reason.startsWith(p))),
    anchors_present:
      examined &&
      ((Array.isArray(anchors) && !errors.some((e) => e.code === "anchor_invalid")) ||
        summary.has("chain_head")),
  };
}
