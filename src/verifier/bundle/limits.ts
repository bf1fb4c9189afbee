/**
 * The bundle size limit and the verdict for a bundle over it, in a module of their own: a
 * caller that only reads and routes bundles (the bulk CLI's main thread) can refuse an
 * oversized one without loading the verifier.
 */
import type { Verdict } from "./result.js";

/** The reference CLI's `MAX_BUNDLE_BYTES`: exactly 8 MiB is still accepted. */
export const MAX_BUNDLE_BYTES = 8 * 1024 * 1024;

/** What the reference prints when it stops before verifying: no reasons, no summary, no rid. */
export interface EarlyExitResult {
  verdict: Verdict;
  errors: { code: string; detail: string }[];
}

export function bundleTooLarge(size: number, limit = MAX_BUNDLE_BYTES): EarlyExitResult {
  return {
    verdict: "UNTRUSTED",
    errors: [{ code: "bundle_too_large", detail: `${size} bytes exceeds limit ${limit}` }],
  };
}
