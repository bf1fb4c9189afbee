/**
 * Verification of a bundle given as raw bytes: the reference CLI's flow (verifier.md §1.1
 * steps 2–4) without the file system. Size is checked before anything is decoded, then the
 * bytes are decoded and parsed strictly, then verified.
 */
import { parseSigned, StrictJsonError } from "../json/parse.js";
import type { VerifyOptions } from "./context.js";
import { bundleTooLarge, type EarlyExitResult, MAX_BUNDLE_BYTES } from "./limits.js";
import type { VerifyResult } from "./result.js";
import { verifyParsedBundle } from "./verify-bundle.js";

export { bundleTooLarge, type EarlyExitResult, MAX_BUNDLE_BYTES } from "./limits.js";

export type DocumentResult = VerifyResult | EarlyExitResult;

/** Maps a parse failure to the reference CLI's result. */
export function unparseableBundle(error: StrictJsonError): EarlyExitResult {
  if (error.reason === "nesting") {
    return {
      verdict: "UNTRUSTED",
      errors: [{ code: "nesting_too_deep", detail: "JSON nesting exceeds the parser limit" }],
    };
  }
  return {
    verdict: "UNTRUSTED",
    errors: [{ code: "malformed", detail: `bundle is not valid JSON: ${error.message}` }],
  };
}

export interface DocumentOptions extends VerifyOptions {
  maxBytes?: number;
  /** Python text-mode newline translation, as the reference CLI reads files. */
  universalNewlines?: boolean;
}

/** Parses and verifies raw bundle bytes; never throws for any input bytes. */
export function verifyBundleBytes(
  bytes: Uint8Array,
  options: DocumentOptions = {},
): DocumentResult {
  const limit = options.maxBytes ?? MAX_BUNDLE_BYTES;
  if (bytes.length > limit) return bundleTooLarge(bytes.length, limit);
  let parsed: ReturnType<typeof parseSigned>;
  try {
    parsed = parseSigned(bytes, { universalNewlines: options.universalNewlines ?? false });
  } catch (error) {
    if (error instanceof StrictJsonError) return unparseableBundle(error);
    throw error;
  }
  return verifyParsedBundle(parsed.value, options, parsed.sources);
}
