/**
 * State shared by the steps of one `verifyBundle` call: the accumulated errors and
 * reasons, the well-formed receipt list, and the per-receipt canonical bytes and digest,
 * computed once and reused by the chain, signature, agreement, anchor and head checks.
 */

import { sha256Digest } from "../crypto/digest.js";
import { CanonicalizationError, canonicalBytes } from "../json/canonical.js";
import type { SignedSources } from "../json/signed-sources.js";
import { isObject, type JsonObject, type JsonValue, member } from "../json/value.js";
import type { ResultBudget } from "./budget.js";
import type { BundleErrorCode, Summary, VerificationError } from "./result.js";

export interface VerifyOptions {
  /** Missing anchors (and chain-head anchors) make the verdict PROVISIONAL. */
  requireAnchor?: boolean;
  /** Statements from external revocation documents, already loaded and merged. */
  externalRevocations?: readonly JsonValue[] | null;
  /**
   * Charged for every error and reason as it is recorded; verification throws
   * `ResultBudgetExceeded` once it is spent. Shared by the bundles of one request.
   */
  budget?: ResultBudget;
}

interface SignedView {
  bytes: Buffer;
  digest: string;
}

export class VerificationContext {
  readonly errors: VerificationError[] = [];
  readonly provisionalReasons: string[] = [];
  readonly insufficientReasons: string[] = [];
  /** Summary members added by the checks, after the base members, in the order they ran. */
  readonly summaryAdditions: Summary = new Map();
  /** The receipts that are objects, in order: every step after the per-receipt pass uses it. */
  readonly wellFormed: JsonObject[];
  readonly requireAnchor: boolean;
  readonly externalRevocations: readonly JsonValue[] | null;
  private readonly budget: ResultBudget | null;
  private readonly signedViews = new Map<JsonObject, SignedView | null>();

  constructor(
    readonly bundle: JsonObject,
    readonly receipts: readonly JsonValue[],
    options: VerifyOptions,
    /** Where the parsed input already holds receipts' signed bytes (none for built values). */
    private readonly sources: SignedSources | null = null,
  ) {
    this.wellFormed = receipts.filter(isObject);
    this.requireAnchor = options.requireAnchor ?? false;
    this.externalRevocations = options.externalRevocations ?? null;
    this.budget = options.budget ?? null;
  }

  fail(code: BundleErrorCode, detail: string, receiptId: JsonValue = null): void {
    const error = { code, detail, receipt_id: receiptId };
    this.budget?.chargeError(error);
    this.errors.push(error);
  }

  provisional(reason: string): void {
    this.budget?.chargeReason(reason);
    this.provisionalReasons.push(reason);
  }

  insufficient(reason: string): void {
    this.budget?.chargeReason(reason);
    this.insufficientReasons.push(reason);
  }

  /** Canonical bytes of the receipt minus `sig` and their digest; null when not encodable. */
  signedView(receipt: JsonObject): SignedView | null {
    let view = this.signedViews.get(receipt);
    if (view === undefined) {
      try {
        const bytes = this.sources?.unsignedBytes(receipt) ?? canonicalBytes(receipt, "sig");
        view = { bytes, digest: sha256Digest(bytes) };
      } catch (error) {
        if (!(error instanceof CanonicalizationError)) throw error;
        view = null;
      }
      this.signedViews.set(receipt, view);
    }
    return view;
  }

  digestOf(receipt: JsonObject): string | null {
    return this.signedView(receipt)?.digest ?? null;
  }
}

/** `receipt.get("body")` when it is an object. */
export function bodyOf(receipt: JsonObject): JsonObject | null {
  const body = receipt.get("body");
  return isObject(body) ? body : null;
}

/** `issuer.get("id")` when the issuer is an object, else None. */
export function issuerIdOf(receipt: JsonObject): JsonValue {
  const issuer = receipt.get("issuer");
  return isObject(issuer) ? member(issuer, "id") : null;
}

export function receiptIdOf(receipt: JsonObject): JsonValue {
  return member(receipt, "receipt_id");
}

export function typeOf(receipt: JsonObject): JsonValue {
  return member(receipt, "type");
}
