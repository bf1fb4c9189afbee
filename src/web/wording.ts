/**
 * Plain words for the verdicts, codes and reasons the verifier reports. The page always
 * shows the exact code beside them: the words explain, the code is what tools compare.
 */

export type Tone = "good" | "warn" | "insufficient" | "bad" | "neutral";

export interface VerdictWords {
  tone: Tone;
  title: string;
  sentence: string;
}

export const VERDICT_WORDS: Record<string, VerdictWords> = {
  TRUSTED: {
    tone: "good",
    title: "Trusted",
    sentence:
      "Every check passed: the chain is intact, every signature verifies and nothing is missing.",
  },
  PROVISIONAL: {
    tone: "warn",
    title: "Provisional",
    sentence:
      "Nothing is wrong, but something could not be checked yet (listed below). Rely on it only with that in mind.",
  },
  INSUFFICIENT_EVIDENCE: {
    tone: "insufficient",
    title: "Insufficient evidence",
    sentence:
      "Nothing is wrong, but evidence is missing, so the bundle cannot be trusted as a whole.",
  },
  UNTRUSTED: {
    tone: "bad",
    title: "Untrusted",
    sentence: "At least one check failed. Do not rely on this bundle.",
  },
};

/** Bundle errors (`errors[].code`), the CLI's load errors included. */
const ERROR_WORDS: Record<string, string> = {
  malformed: "The bundle or a receipt is not shaped as the specification requires.",
  nesting_too_deep: "The JSON is nested too deeply to be checked.",
  version_unsupported: "It names a specification version this verifier does not know.",
  too_many_receipts: "It holds more receipts than a bundle may (10,000).",
  bundle_too_large: "The file is larger than a bundle may be (8 MiB).",
  task_mismatch: "A receipt belongs to another task than the bundle.",
  unknown_type: "A receipt has a type its specification version does not define.",
  chain_break:
    "The hash chain is broken here: this receipt does not point to the one before it, or is out of sequence.",
  bad_signature:
    "The signature does not verify: the receipt was changed after it was signed, or signed by another key.",
  policy_mismatch: "A decision was taken under another policy version than the session allowed.",
  cap_exceeded: "A settlement exceeds the session's spending cap.",
  delivery_before_settlement:
    "A payment gated on delivery was recorded before any delivery was attested.",
  missing_termination: "The task has no termination receipt.",
  offer_mismatch: "An acceptance does not match the offer it refers to.",
  offer_expired: "An offer was accepted after it had expired.",
  offeree_mismatch: "An offer was accepted by someone other than the party it was made to.",
  accept_before_offer: "An acceptance is dated before its offer.",
  agreement_before_accept: "Work bound to an agreement is dated before the agreement was accepted.",
  agreement_issuer_mismatch:
    "Work bound to an agreement was signed by someone other than the party that accepted it.",
  authority_before_grant: "An action was taken before the authority for it was granted.",
  authority_agent_mismatch:
    "An action was signed by someone other than the agent the authority was granted to.",
  authority_expired: "An action was taken after its authority had expired.",
  redacted_required: "A field the specification requires was redacted.",
  commit_mismatch: "A disclosed value does not match what the receipt committed to.",
  bad_attestation: "The counterparty's attestation does not verify.",
  provenance_invalid: "An input-provenance hash has a form the specification does not allow.",
  bad_revocation: "A revocation statement is malformed, or its signature does not verify.",
  key_revoked: "This receipt was signed with a key that had already been revoked.",
  anchor_invalid: "An anchor does not match the receipt it names, or has an unknown type.",
  head_mismatch: "The declared chain head does not match the last receipt.",
  head_anchor_invalid: "The chain head's anchor entry is invalid.",
  bad_revocations_document: "A revocation document you supplied cannot be used.",
  revocations_too_large: "A revocation document you supplied is larger than 1 MiB.",
  revocations_unreachable: "A revocation document could not be read.",
  revocations_insecure_url: "A revocation document's address is not https.",
};

/** Provisional and insufficient reasons: `<code>` or `<code>:<receipt id or path>`. */
const REASON_WORDS: Record<string, string> = {
  anchor_missing: "No anchor confirms when the chain existed, and an anchor was required.",
  head_anchor_missing: "The chain head is not anchored, and an anchor was required.",
  redacted_without_disclosure:
    "A field is redacted and its value is not disclosed, so it could not be checked.",
  erased_content: "A field's content was erased: what it said can no longer be checked.",
  missing_offer: "This acceptance refers to an offer that is not in the bundle.",
  missing_agreement: "This work refers to an agreement acceptance that is not in the bundle.",
  agreement_unreferenced: "This accepted agreement is not referred to by any work.",
  missing_agreement_ref: "This work, by a party that accepted an agreement, does not refer to it.",
  missing_authority: "This action refers to an authority grant that is not in the bundle.",
  authority_unreferenced: "This authority grant is not used by any action.",
};

/** Verification-receipt check codes. */
const RECEIPT_CHECK_WORDS: Record<string, string> = {
  not_an_object: "It is not a JSON object.",
  bad_kind: "It is not a verification receipt (its kind is wrong).",
  bad_version: "Its version is not 1.",
  bad_verdict: "Its verdict is not one of the four verdicts.",
  bad_verified_at: "Its verification time is not a valid UTC timestamp.",
  bad_bundle_digest: "Its bundle digest is not a sha256 digest.",
  bad_errors: "Its error list is malformed.",
  bad_provisional_reasons: "Its provisional reasons are malformed.",
  bad_insufficient_reasons: "Its insufficient-evidence reasons are malformed.",
  bad_summary: "Its summary is not an object.",
  bad_error_codes: "Its error codes are malformed.",
  error_codes_mismatch: "Its error codes do not match its errors.",
  verdict_mismatch: "Its verdict does not follow from its errors and reasons.",
  bad_signature_shape: "Its signature is missing, not Ed25519, or not by its issuer.",
  bad_signature:
    "Its signature does not verify: it was changed after signing, or not signed by its issuer.",
  bundle_digest_mismatch: "It describes another bundle than the one given.",
  bad_revocation: "A revocation statement is malformed, or its signature does not verify.",
  key_revoked: "Its issuer's key had been revoked before the receipt was signed.",
  bad_revocations_document: "A revocation document you supplied cannot be used.",
  revocations_too_large: "A revocation document you supplied is larger than 1 MiB.",
};

export const ANCHOR_STATUS_WORDS: Record<string, VerdictWords> = {
  verified: {
    tone: "good",
    title: "Verified",
    sentence:
      "The proof reaches a Bitcoin block whose header you supplied: the data existed when that block was mined.",
  },
  unverified: {
    tone: "warn",
    title: "Not verified yet",
    sentence: "The proof reads correctly, but nothing could confirm it (see below).",
  },
  mismatch: {
    tone: "bad",
    title: "Mismatch",
    sentence: "The proof does not belong to this data, or to the block headers supplied.",
  },
  invalid: {
    tone: "bad",
    title: "Invalid",
    sentence: "The proof cannot be used.",
  },
};

const ANCHOR_CODE_WORDS: Record<string, string> = {
  anchor_verified: "A Bitcoin attestation matches the merkle root of a supplied block header.",
  anchor_unverified:
    "The proof reaches Bitcoin, but no block header was supplied for its height to check it against.",
  anchor_pending:
    "Only pending calendar attestations: the proof is not in Bitcoin yet. Upgrade it later.",
  anchor_unknown_type: "Only attestations of unknown types: nothing could be checked.",
  anchor_empty: "The proof holds no attestation.",
  digest_mismatch: "The proof commits to other data than the file or digest given.",
  header_mismatch: "No Bitcoin attestation matches the supplied header at its height.",
  bad_digest: "The digest is not hex.",
  bad_header: "A block header is not 80 bytes of hex.",
  bad_magic: "This is not an OpenTimestamps proof file.",
  unsupported_version: "The proof's format version is not supported.",
  unknown_op: "The proof uses an unknown operation.",
  unsupported_op: "The proof uses an operation this verifier does not run (such as keccak-256).",
  truncated: "The proof file is cut short.",
  invalid_varuint: "The proof file holds a malformed number.",
  invalid_length: "The proof file holds a malformed length.",
  trailing_data: "The proof file has data after its end.",
  message_too_long: "The proof builds a message longer than allowed.",
  invalid_result: "The proof builds an invalid intermediate result.",
  recursion_limit: "The proof is nested too deeply.",
  too_many_nodes: "The proof has too many branches.",
};

export function errorWords(code: string): string {
  return ERROR_WORDS[code] ?? "A check failed.";
}

/** `[code, subject]` of a reason such as `erased_content:receipts[3].body.x`. */
export function splitReason(reason: string): [string, string | null] {
  const colon = reason.indexOf(":");
  return colon === -1 ? [reason, null] : [reason.slice(0, colon), reason.slice(colon + 1)];
}

export function reasonWords(code: string): string {
  return REASON_WORDS[code] ?? "Something could not be checked.";
}

export function receiptCheckWords(code: string): string {
  return RECEIPT_CHECK_WORDS[code] ?? "A check failed.";
}

export function anchorCodeWords(code: string): string {
  return ANCHOR_CODE_WORDS[code] ?? "";
}

const TYPE_WORDS: Record<string, string> = {
  "session.pass.created": "Session opened",
  "task.decision": "Decision",
  "task.execution": "Execution",
  "delivery.attestation": "Delivery",
  "task.termination": "Termination",
  settlement: "Settlement",
  "authority.succession": "Authority handed over",
  "agreement.offer": "Offer",
  "agreement.accept": "Acceptance",
  "state.commitment": "State commitment",
  "authority.grant": "Authority grant",
};

export function typeWords(type: string): string | undefined {
  return TYPE_WORDS[type];
}

/** The kinds of finding: errors, and the two kinds of reason. */
export type FindingKind = "error" | "provisional" | "insufficient";

export function iconFor(tone: Tone): string {
  switch (tone) {
    case "good":
      return "✓";
    case "bad":
      return "✗";
    case "warn":
      return "!";
    case "insufficient":
      return "?";
    default:
      return "•";
  }
}

export function findingTone(kind: FindingKind): Tone {
  return kind === "error" ? "bad" : kind === "insufficient" ? "insufficient" : "warn";
}

export function findingKindWords(kind: FindingKind): string {
  return kind === "error" ? "Error" : kind === "insufficient" ? "Missing evidence" : "Not checked";
}
