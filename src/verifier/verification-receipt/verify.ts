/**
 * Verification-receipt checks (verifier.md §6.2): every rule runs and every failure is
 * reported, in the reference's order, so a holder sees all that is wrong with a receipt.
 *
 * The shape predicates are exported because issuance (issue.ts) refuses exactly what
 * these checks would reject.
 */
import { VERDICTS, type Verdict, verdictFor } from "../bundle/result.js";
import { SHA256_DIGEST, valueDigest } from "../crypto/digest.js";
import { statementSignatureProblem } from "../crypto/signed-statement.js";
import { CanonicalizationError } from "../json/canonical.js";
import { parseJson, StrictJsonError } from "../json/parse.js";
import { isArray, isObject, type JsonObject, type JsonValue, member } from "../json/value.js";
import { pyEquals } from "../py/semantics.js";
import {
  RevocationsUnusable,
  type StatementCheck,
  verifyStatements,
} from "../revocations/statements.js";
import { isValidTimestamp, TimestampCrash, timestampMillis } from "../timestamps.js";

export const VERIFICATION_RECEIPT_KIND = "continuity-receipt-verification";

/**
 * A bundle as a parsed value, or as JSON bytes or text. A string is always read as JSON
 * text, as the reference does for a Python `str`.
 */
export type BundleInput = JsonValue | Uint8Array;

export type ReceiptCheckCode =
  | "not_an_object"
  | "bad_kind"
  | "bad_version"
  | "bad_verdict"
  | "bad_verified_at"
  | "bad_bundle_digest"
  | "bad_errors"
  | "bad_provisional_reasons"
  | "bad_insufficient_reasons"
  | "bad_summary"
  | "bad_error_codes"
  | "error_codes_mismatch"
  | "verdict_mismatch"
  | "bad_signature_shape"
  | "bad_signature"
  | "bundle_digest_mismatch"
  | "bad_revocation"
  | "key_revoked";

/** The reference's result dict; members are declared (and created) in its order. */
export interface ReceiptCheck {
  valid: boolean;
  errors: ReceiptCheckCode[];
  issuer: JsonValue;
  verdict: JsonValue;
  verified_at: JsonValue;
  bundle_digest: JsonValue;
  /** Null when no bundle was supplied. */
  digest_match: boolean | null;
}

export interface VerifyReceiptOptions {
  /**
   * The bundle the receipt claims to describe. `null` counts as not supplied, as Python's
   * `bundle=None` does. Bytes or text that do not parse strictly simply do not match.
   */
  bundle?: BundleInput;
  /** Revocation statements (already merged) to check the issuer key against. */
  revocations?: readonly JsonValue[];
}

export function isVerdict(value: JsonValue): value is Verdict {
  return typeof value === "string" && (VERDICTS as readonly string[]).includes(value);
}

/** A list of objects that each have a string `code` (any string, even an empty one). */
export function isErrorList(value: JsonValue): value is JsonObject[] {
  return (
    isArray(value) &&
    value.every((entry) => isObject(entry) && typeof member(entry, "code") === "string")
  );
}

export function isStringList(value: JsonValue): value is string[] {
  return isArray(value) && value.every((item) => typeof item === "string");
}

/** The codes of a list that passed `isErrorList`, in order. */
export function errorCodesOf(errors: readonly JsonObject[]): string[] {
  return errors.map((entry) => member(entry, "code") as string);
}

/**
 * sha256 of the canonical bundle. Throws `StrictJsonError` for bytes or text that do not
 * parse and `CanonicalizationError` for a bundle holding floats or lone surrogates.
 */
export function bundleDigest(bundle: BundleInput): string {
  const value =
    bundle instanceof Uint8Array || typeof bundle === "string" ? parseJson(bundle) : bundle;
  return valueDigest(value);
}

/** Checks 1 to 10: the statement's own members and their mutual consistency. */
function shapeErrors(receipt: JsonObject): ReceiptCheckCode[] {
  const found: ReceiptCheckCode[] = [];
  const verdict = member(receipt, "verdict");
  const errors = member(receipt, "errors");
  const provisional = member(receipt, "provisional_reasons");
  const insufficient = member(receipt, "insufficient_reasons");
  const bundleDigestClaim = member(receipt, "bundle_digest");

  if (member(receipt, "kind") !== VERIFICATION_RECEIPT_KIND) found.push("bad_kind");
  if (!pyEquals(member(receipt, "version"), 1)) found.push("bad_version");
  if (!isVerdict(verdict)) found.push("bad_verdict");
  if (!isValidTimestamp(member(receipt, "verified_at"))) found.push("bad_verified_at");
  if (typeof bundleDigestClaim !== "string" || !SHA256_DIGEST.test(bundleDigestClaim)) {
    found.push("bad_bundle_digest");
  }
  const errorsWellFormed = isErrorList(errors);
  if (!errorsWellFormed) found.push("bad_errors");
  if (!isStringList(provisional)) found.push("bad_provisional_reasons");
  if (!isStringList(insufficient)) found.push("bad_insufficient_reasons");
  if (!isObject(member(receipt, "summary"))) found.push("bad_summary");

  const errorCodes = member(receipt, "error_codes");
  if (!isStringList(errorCodes)) found.push("bad_error_codes");
  else if (errorsWellFormed && !pyEquals(errorCodes, errorCodesOf(errors))) {
    found.push("error_codes_mismatch");
  }
  if (
    isVerdict(verdict) &&
    errorsWellFormed &&
    isStringList(provisional) &&
    isStringList(insufficient) &&
    verdict !== verdictFor(errors, provisional, insufficient)
  ) {
    found.push("verdict_mismatch");
  }
  return found;
}

/** Check 12: a bundle that cannot be parsed or canonicalised matches nothing. */
function bundleDigestMatches(bundle: BundleInput, claimed: JsonValue): boolean {
  try {
    return bundleDigest(bundle) === claimed;
  } catch (error) {
    if (error instanceof StrictJsonError || error instanceof CanonicalizationError) return false;
    throw error;
  }
}

/**
 * Check 13. Where the reference raises instead of answering (REF-CRASH, verifier.md §11.3),
 * the input that made it raise is reported under its own code and `key_revoked` is skipped,
 * because no revocation can be evaluated:
 * - a statement holding a float, a truthy non-string `sig.value`, or a `revoked_at` that is
 *   not a real instant → one `bad_revocation` for the whole list;
 * - a `verified_at` that passes the regex but is not a real instant → `bad_verified_at`.
 */
function revocationErrors(
  statements: readonly JsonValue[],
  verifiedAt: JsonValue,
  issuer: JsonValue,
): ReceiptCheckCode[] {
  let check: StatementCheck;
  try {
    check = verifyStatements(statements);
  } catch (error) {
    if (error instanceof RevocationsUnusable) return ["bad_revocation"];
    throw error;
  }
  const found: ReceiptCheckCode[] = check.errors.map(() => "bad_revocation");
  if (!isValidTimestamp(verifiedAt) || typeof issuer !== "string" || issuer === "") return found;
  let verifiedAtMillis: number;
  try {
    verifiedAtMillis = timestampMillis(verifiedAt);
  } catch (error) {
    if (error instanceof TimestampCrash) return [...found, "bad_verified_at"];
    throw error;
  }
  for (const revocation of check.revoked) {
    if (revocation.key === issuer && verifiedAtMillis >= revocation.revokedAt) {
      found.push("key_revoked");
    }
  }
  return found;
}

/** `verify_verification_receipt(receipt, bundle=None, revocations=None)`. */
export function verifyVerificationReceipt(
  receipt: JsonValue,
  options: VerifyReceiptOptions = {},
): ReceiptCheck {
  if (!isObject(receipt)) {
    return {
      valid: false,
      errors: ["not_an_object"],
      issuer: null,
      verdict: null,
      verified_at: null,
      bundle_digest: null,
      digest_match: null,
    };
  }
  const issuer = member(receipt, "issuer");
  const verifiedAt = member(receipt, "verified_at");
  const claimedDigest = member(receipt, "bundle_digest");

  const errors = shapeErrors(receipt);
  const signatureProblem = statementSignatureProblem(receipt);
  if (signatureProblem !== null) errors.push(signatureProblem);

  let digestMatch: boolean | null = null;
  if (options.bundle !== undefined && options.bundle !== null) {
    digestMatch = bundleDigestMatches(options.bundle, claimedDigest);
    if (!digestMatch) errors.push("bundle_digest_mismatch");
  }
  const revocations = options.revocations ?? [];
  if (revocations.length > 0) errors.push(...revocationErrors(revocations, verifiedAt, issuer));

  return {
    valid: errors.length === 0,
    errors,
    issuer,
    verdict: member(receipt, "verdict"),
    verified_at: verifiedAt,
    bundle_digest: claimedDigest,
    digest_match: digestMatch,
  };
}
