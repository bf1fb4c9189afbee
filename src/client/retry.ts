/**
 * When to try a request again, and after how long. The server's word comes first:
 * `Retry-After` (seconds or an HTTP date) and, on a 429, the IETF `RateLimit` field's `t`
 * when `r` is 0. Without one, exponential backoff with full jitter. Every wait is capped; a
 * server asking for longer than the cap (a daily cap's `Retry-After: 86400`) is not retried
 * at all, since waiting a day inside a call is never what the caller wants.
 */

export interface RetryOptions {
  /** Attempts in all, the first included (default 10). */
  maxAttempts?: number;
  /** First backoff step without a server hint, in ms (default 200). */
  baseDelayMs?: number;
  /** The longest single wait, in ms (default 30,000). A longer server hint is not waited. */
  maxDelayMs?: number;
}

export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return {
    maxAttempts: Math.max(1, options.maxAttempts ?? 10),
    baseDelayMs: options.baseDelayMs ?? 200,
    maxDelayMs: options.maxDelayMs ?? 30_000,
  };
}

/** Statuses worth another attempt: the server said "later" or "not yet". */
export function retryableStatus(status: number, code: string | null): boolean {
  if (status === 503 || status === 429) return true;
  // The same Idempotency-Key is still running on the server: its answer comes soon.
  return status === 409 && code === "idempotency_key_in_flight";
}

type HeaderValue = string | string[] | undefined;

function first(value: HeaderValue): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** `Retry-After` in ms: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: HeaderValue, nowMs = Date.now()): number | undefined {
  const text = first(value)?.trim();
  if (text === undefined || text === "") return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** The `t` of a `RateLimit` field whose `r` is 0 (the quota is spent), in ms. */
export function rateLimitResetMs(value: HeaderValue): number | undefined {
  const text = first(value);
  if (text === undefined) return undefined;
  const remaining = /;r=(\d+)/.exec(text)?.[1];
  const reset = /;t=(\d+)/.exec(text)?.[1];
  if (remaining !== "0" || reset === undefined) return undefined;
  return Number(reset) * 1000;
}

/**
 * The wait before attempt `attempt + 1` (attempt counts from 0), or null when the server's
 * hint is beyond the cap. A hint is stretched by up to a fifth so that clients told the same
 * second do not all return in it.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  hintMs: number | undefined,
  random: () => number = Math.random,
): number | null {
  if (hintMs !== undefined) {
    if (hintMs > policy.maxDelayMs) return null;
    return Math.min(policy.maxDelayMs, Math.round(hintMs * (1 + 0.2 * random())));
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(ceiling * random());
}

/** Errors of a connection that failed before an answer arrived (undici's and Node's codes). */
const CONNECTION_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

export function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && CONNECTION_CODES.has(code);
}
