/** Step A: inputs that end verification before any receipt is looked at. */
import { isArray, isObject, type JsonValue, member } from "../../json/value.js";
import { pyRepr } from "../../py/repr.js";
import { isSupportedSpec } from "../record-types.js";
import type { BundleErrorCode, VerifyResult } from "../result.js";

export const MAX_BUNDLE_DEPTH = 64;
export const MAX_RECEIPTS = 10_000;

function earlyExit(code: BundleErrorCode, detail: string): VerifyResult {
  return {
    verdict: "UNTRUSTED",
    errors: [{ code, detail, receipt_id: null }],
    provisional_reasons: [],
    insufficient_reasons: [],
    summary: new Map(),
  };
}

/**
 * True when some value (scalars included) sits deeper than `limit`; the root is depth 1.
 * Recursive on purpose: the recursion stops one level below `limit`, so the stack stays
 * shallow, and nothing is allocated per value (an explicit stack of [value, depth] pairs
 * cost 32 MB for a 1 MiB body of `{}` receipts).
 */
export function exceedsDepth(root: JsonValue, limit: number, depth = 1): boolean {
  if (depth > limit) return true;
  if (isArray(root)) {
    for (const item of root) if (exceedsDepth(item, limit, depth + 1)) return true;
  } else if (isObject(root)) {
    for (const item of root.values()) if (exceedsDepth(item, limit, depth + 1)) return true;
  }
  return false;
}

/** Returns the final result for an early exit, or the receipts list to verify. */
export function checkEarlyExits(bundle: JsonValue): VerifyResult | JsonValue[] {
  if (!isObject(bundle)) return earlyExit("malformed", "bundle is not an object");
  if (exceedsDepth(bundle, MAX_BUNDLE_DEPTH)) {
    return earlyExit("nesting_too_deep", `bundle nesting exceeds depth ${MAX_BUNDLE_DEPTH}`);
  }
  const spec = member(bundle, "spec");
  if (!isSupportedSpec(spec)) return earlyExit("version_unsupported", `spec=${pyRepr(spec)}`);
  const receipts = member(bundle, "receipts");
  if (!isArray(receipts) || receipts.length === 0) {
    return earlyExit("malformed", "bundle has no receipts");
  }
  if (receipts.length > MAX_RECEIPTS) {
    return earlyExit(
      "too_many_receipts",
      `${receipts.length} receipts exceeds limit ${MAX_RECEIPTS}`,
    );
  }
  return receipts;
}
