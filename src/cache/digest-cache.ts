/**
 * The opt-in digest cache of `POST /verify?cache=1` (service.md §1): verdicts of single-bundle
 * requests, keyed by the SHA-256 of the raw request body and the `require_anchor` flag, kept
 * 900 s, at most 256 entries, oldest evicted first, never written to disk. Embedded mode keeps
 * it in process memory (`MemoryDigestCache`); distributed mode in Redis, shared by every
 * instance. Routes see only this interface.
 */
import { hash } from "node:crypto";

/** What is remembered of one verification: enough to answer a hit without the verifier. */
export interface CachedVerdict {
  /** The verdict payload (`verifier.md` §5) as compact JSON text, without `service`. */
  verdictJson: string;
  /**
   * The verification receipt issued at verification time, as compact JSON text, or the reason
   * none could be issued. Kept even when the first request did not ask for one, so a later
   * `?receipt=1` hit is answered with the byte-identical receipt.
   */
  receipt: { json: string } | { error: string };
  /** The verification time, RFC 3339 whole seconds. */
  verifiedAt: string;
  /** When the entry was stored, in milliseconds of the cache's clock (for `age_s`). */
  storedAtMs: number;
}

export interface DigestCacheLimits {
  ttlSeconds: number;
  maxEntries: number;
}

export interface DigestCache {
  /** The live entry for `key`, or null (absent or expired). */
  get(key: string): Promise<CachedVerdict | null>;
  /** Stores `value` under `key`, evicting the oldest entries beyond the limit. */
  set(key: string, value: Omit<CachedVerdict, "storedAtMs">): Promise<void>;
  close(): Promise<void>;
}

/** The cache key: the raw body's SHA-256 and the one flag that changes the verdict. */
export function digestCacheKey(rawBody: Uint8Array, requireAnchor: boolean): string {
  // One-shot: no Hash object per request (issue 33).
  const digest = hash("sha256", rawBody, "hex");
  return `${digest}:${requireAnchor ? "anchor" : "any"}`;
}
