/**
 * `verifyBundle`: the orchestrator. Reads like verifier.md §4 — one pure step per
 * concern, in the reference's order, every failure accumulated.
 */
import { compareCodePoints } from "../json/canonical.js";
import type { SignedSources } from "../json/signed-sources.js";
import { isObject, type JsonValue } from "../json/value.js";
import { pyRepr } from "../py/repr.js";
import { PyOverflowError } from "../py/semantics.js";
import { TimestampCrash } from "../timestamps.js";
import { issuerIdOf, typeOf, VerificationContext, type VerifyOptions } from "./context.js";
import { type Summary, type VerifyResult, verdictFor } from "./result.js";
import { checkAgreements } from "./steps/agreements.js";
import { checkAnchors } from "./steps/anchors.js";
import { checkAttestations } from "./steps/attestations.js";
import { checkAuthority } from "./steps/authority.js";
import { checkChainHead } from "./steps/chain-head.js";
import { checkCrossRecord } from "./steps/cross-record.js";
import { checkEarlyExits } from "./steps/early-exits.js";
import { checkReceipts } from "./steps/receipts.js";
import { checkRedactions } from "./steps/redactions.js";
import { checkRevocations } from "./steps/revocations.js";
import { checkShape } from "./steps/shape.js";

export type { VerifyOptions } from "./context.js";

const STEPS = [
  checkShape,
  checkReceipts,
  checkCrossRecord,
  checkAgreements,
  checkAuthority,
  checkRedactions,
  checkAttestations,
  checkRevocations,
  checkAnchors,
  checkChainHead,
] as const;

function baseSummary(ctx: VerificationContext): Summary {
  const types = ctx.wellFormed.map(typeOf);
  const issuers = new Set<string>();
  for (const receipt of ctx.wellFormed) {
    const id = issuerIdOf(receipt);
    if (typeof id === "string") issuers.add(id);
  }
  return new Map<string, JsonValue>([
    ["receipts", ctx.receipts.length],
    ["types", types],
    ["issuers", [...issuers].sort(compareCodePoints)],
    ["terminated", types.includes("task.termination")],
    ["settled", types.includes("settlement")],
  ]);
}

/**
 * Where the reference raises instead of answering (verifier.md §11.3), verification stops
 * at the same point and the bundle is UNTRUSTED with a `malformed` error naming the cause.
 */
function crashDetail(error: unknown): string | null {
  if (error instanceof TimestampCrash) {
    return `timestamp is not a real UTC instant: ${pyRepr(error.timestamp)}`;
  }
  if (error instanceof PyOverflowError) return "settlement amount is not numeric (infinite)";
  return null;
}

export function verifyBundle(bundle: JsonValue, options: VerifyOptions = {}): VerifyResult {
  return verifyParsedBundle(bundle, options, null);
}

/**
 * `verifyBundle` of a value just parsed with `parseSigned`: receipts the input spelled
 * canonically are signed and hashed over their input bytes (the same bytes, not encoded again).
 */
export function verifyParsedBundle(
  bundle: JsonValue,
  options: VerifyOptions,
  sources: SignedSources | null,
): VerifyResult {
  const receiptsOrExit = checkEarlyExits(bundle);
  if (!Array.isArray(receiptsOrExit)) {
    for (const error of receiptsOrExit.errors) options.budget?.chargeError(error);
    return receiptsOrExit;
  }
  if (!isObject(bundle)) throw new Error("unreachable: early exits admit only objects");
  const ctx = new VerificationContext(bundle, receiptsOrExit, options, sources);
  try {
    for (const step of STEPS) step(ctx);
  } catch (error) {
    const detail = crashDetail(error);
    if (detail === null) throw error;
    ctx.fail("malformed", detail);
  }
  const summary = baseSummary(ctx);
  for (const [key, value] of ctx.summaryAdditions) summary.set(key, value);
  return {
    verdict: verdictFor(ctx.errors, ctx.provisionalReasons, ctx.insufficientReasons),
    errors: ctx.errors,
    provisional_reasons: ctx.provisionalReasons,
    insufficient_reasons: ctx.insufficientReasons,
    summary,
  };
}
