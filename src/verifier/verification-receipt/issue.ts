/**
 * Issuing verification receipts (verifier.md §6.1): a signed record of one verification run
 * (the verdict with every error, reason and the summary) bound to the bundle by its digest.
 */
import { type VerifyResult, verdictFor } from "../bundle/result.js";
import { codedErrorClass } from "../coded-error.js";
import { recordDigest } from "../crypto/digest.js";
import { type Ed25519Signer, ed25519Signature } from "../crypto/ed25519.js";
import { CanonicalizationError, canonicalBytes } from "../json/canonical.js";
import { StrictJsonError } from "../json/parse.js";
import {
  fromPlain,
  isObject,
  type JsonObject,
  type JsonValue,
  member,
  PyFloat,
} from "../json/value.js";
import { formatUtcSeconds, isValidTimestamp } from "../timestamps.js";
import { VERIFIER_VERSION } from "../version.js";
import {
  type BundleInput,
  bundleDigest,
  errorCodesOf,
  isErrorList,
  isStringList,
  isVerdict,
  VERIFICATION_RECEIPT_KIND,
} from "./verify.js";

export const DEFAULT_IMPLEMENTATION = "receiptd";

export type VerificationReceiptIssueErrorCode = "receipt_not_issuable";
/** The result or bundle cannot back a receipt; nothing was signed. */
export class VerificationReceiptIssueError extends codedErrorClass<VerificationReceiptIssueErrorCode>(
  "receipt_not_issuable",
) {
  override readonly name = "VerificationReceiptIssueError";
}

export interface IssueOptions {
  /** `verifier.implementation`; defaults to `"receiptd"`. */
  implementation?: string;
  /** `verifier.version`; defaults to this package's version. */
  version?: string;
  /** Defaults to now, in whole seconds (`YYYY-MM-DDTHH:MM:SSZ`). */
  verifiedAt?: string;
}

/** `VerifyResult.as_dict()`; a value that is already JSON passes through unchanged. */
function resultAsJson(result: VerifyResult | JsonValue): JsonValue {
  if (
    result === null ||
    typeof result !== "object" ||
    result instanceof Map ||
    result instanceof PyFloat ||
    Array.isArray(result)
  ) {
    return result;
  }
  return new Map<string, JsonValue>([
    ["verdict", result.verdict],
    [
      "errors",
      result.errors.map(
        (error) =>
          new Map<string, JsonValue>([
            ["code", error.code],
            ["detail", error.detail],
            ["receipt_id", error.receipt_id],
          ]),
      ),
    ],
    ["provisional_reasons", result.provisional_reasons],
    ["insufficient_reasons", result.insufficient_reasons],
    ["summary", result.summary],
  ]);
}

function refuse(message: string): never {
  throw new VerificationReceiptIssueError(message);
}

/**
 * Signs a receipt for `result`, the outcome of verifying `bundle`. Throws
 * `VerificationReceiptIssueError` for a result that is not a coherent verification outcome
 * or a bundle that cannot be parsed or canonicalised. Besides the reference's input checks,
 * it refuses a non-object summary and an invalid `verifiedAt`, so it never signs a receipt
 * that `verifyVerificationReceipt` would reject.
 */
export function issueVerificationReceipt(
  bundle: BundleInput,
  result: VerifyResult | JsonValue,
  signer: Ed25519Signer,
  options: IssueOptions = {},
): JsonObject {
  // A deep copy: later changes to the caller's result must not alter what was signed.
  const outcome = fromPlain(resultAsJson(result));
  if (!isObject(outcome)) refuse("the verification result is not an object");
  const verdict = member(outcome, "verdict");
  const errors = member(outcome, "errors");
  const provisional = member(outcome, "provisional_reasons");
  const insufficient = member(outcome, "insufficient_reasons");
  const summary = member(outcome, "summary");
  if (!isVerdict(verdict))
    refuse("verdict must be one of TRUSTED, PROVISIONAL, INSUFFICIENT_EVIDENCE, UNTRUSTED");
  if (!isErrorList(errors)) refuse("errors must be a list of objects with a string code");
  if (!isStringList(provisional)) refuse("provisional_reasons must be a list of strings");
  if (!isStringList(insufficient)) refuse("insufficient_reasons must be a list of strings");
  const implied = verdictFor(errors, provisional, insufficient);
  if (verdict !== implied)
    refuse(`verdict ${verdict} contradicts its lists, which imply ${implied}`);
  if (!isObject(summary)) refuse("summary must be an object");
  const verifiedAt = options.verifiedAt ?? formatUtcSeconds();
  if (!isValidTimestamp(verifiedAt)) refuse(`verified_at is not a UTC timestamp: ${verifiedAt}`);

  let digest: string;
  try {
    digest = bundleDigest(bundle);
  } catch (error) {
    if (error instanceof StrictJsonError) refuse(`bundle is not valid JSON: ${error.message}`);
    if (error instanceof CanonicalizationError) {
      refuse(`bundle cannot be canonicalised: ${error.message}`);
    }
    throw error;
  }

  const receipt: JsonObject = new Map<string, JsonValue>([
    ["kind", VERIFICATION_RECEIPT_KIND],
    ["version", 1],
    ["bundle_digest", digest],
    ["verdict", verdict],
    ["error_codes", errorCodesOf(errors)],
    ["errors", errors],
    ["provisional_reasons", provisional],
    ["insufficient_reasons", insufficient],
    ["summary", summary],
    ["verified_at", verifiedAt],
    [
      "verifier",
      new Map<string, JsonValue>([
        ["implementation", options.implementation ?? DEFAULT_IMPLEMENTATION],
        ["version", options.version ?? VERIFIER_VERSION],
      ]),
    ],
    ["issuer", signer.did],
  ]);
  let statement: Buffer;
  try {
    statement = canonicalBytes(receipt);
  } catch (error) {
    if (error instanceof CanonicalizationError) {
      refuse(`the verification result cannot be canonicalised: ${error.message}`);
    }
    throw error;
  }
  receipt.set("sig", ed25519Signature(signer, statement));
  return receipt;
}

/** The value to anchor: sha256 of the canonical receipt without `sig`. */
export function verificationReceiptDigest(receipt: JsonObject): string {
  return recordDigest(receipt);
}
