/**
 * The digest cache's answers as text (service.md §1, "Digest cache"). Pure string building
 * from stored JSON text: the worker uses it for a fresh verdict, the main thread for a hit,
 * and neither parses or signs anything.
 */
import type { CachedVerdict } from "../../cache/digest-cache.js";
import { dumpCompact } from "../../verifier/json/dump.js";
import { SERVICE_NAME } from "../service-name.js";

/** A verification remembered by the digest cache (`CachedVerdict` minus its storage time). */
export type CacheableVerdict = Omit<CachedVerdict, "storedAtMs">;

export interface CacheMember {
  hit: boolean;
  /** Whole seconds since the verdict was cached; hits only. */
  ageSeconds?: number;
}

/**
 * The answer to a cached (or cacheable) single bundle: the verdict payload, the receipt when
 * asked for, `cache`, then `service` — assembled from the stored JSON text, so a hit costs no
 * parsing and no signature.
 */
export function cachedVerdictResponse(
  entry: CacheableVerdict,
  withReceipt: boolean,
  cache: CacheMember,
): string {
  const parts = [entry.verdictJson.slice(0, -1)];
  if (withReceipt) {
    parts.push(
      "json" in entry.receipt
        ? `,"verification_receipt":${entry.receipt.json}`
        : `,"verification_receipt_error":${dumpCompact(entry.receipt.error)}`,
    );
  }
  const cacheMember =
    cache.hit && cache.ageSeconds !== undefined
      ? { hit: true, cached_at: entry.verifiedAt, age_s: cache.ageSeconds }
      : { hit: cache.hit, cached_at: entry.verifiedAt };
  parts.push(`,"cache":${dumpCompact(cacheMember)},"service":${dumpCompact(SERVICE_NAME)}}`);
  return parts.join("");
}
