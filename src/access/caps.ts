/**
 * Daily caps (service.md §9): one counter per principal (`principal.ts`: `key:<id>`,
 * `x402:<payer>`, `anonymous`) per UTC day, reset at 00:00 UTC. Embedded mode counts in
 * process memory (`MemoryCapStore`); distributed mode in Redis, shared by every instance.
 * Routes see only this interface and the response helpers below.
 */

/** The outcome of one request against its bucket; the rate-limit headers are derived from it. */
export interface CapDecision {
  /** True when the request is within the cap (and was counted). */
  allowed: boolean;
  limit: number;
  /** Requests left today after this one (0 when refused). */
  remaining: number;
  /** Whole seconds to the next 00:00 UTC, at least 1. */
  resetSeconds: number;
}

export interface CapStore {
  /**
   * Counts one request against `bucket` for the UTC day of `nowMs` (default: the store's
   * clock) if the bucket has fewer than `limit` requests that day; a refused request is not
   * counted. Atomic across every process sharing the store. The distributed store does it in
   * one Redis script (GET, compare, INCR, EXPIREAT at the next midnight), which is why the
   * interface offers nothing a single atomic step could not answer.
   */
  consume(bucket: string, limit: number, nowMs?: number): Promise<CapDecision>;
  /**
   * Gives back one request that `consume` counted for `bucket` at `nowMs` (the same instant,
   * so the same UTC day), once the request turned out to be refused (`isChargedStatus`).
   * Never takes a counter below 0, and does nothing once that day's counter is gone. Counting
   * first and refunding later is what keeps a cap exact under concurrency: a request holds its
   * place while it runs, so requests that are all still running can never exceed the cap.
   */
  refund(bucket: string, nowMs: number): Promise<void>;
  /**
   * Requests counted for `bucket` on the UTC day of `nowMs`, without counting one (0 for a
   * bucket not counted that day). A reading, not a reservation: it may be stale by the time it
   * is used, so it may steer a cost (the evaluation keys' difficulty) but never admit anyone.
   */
  count(bucket: string, nowMs: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Whether an answer is charged, to its daily cap and (for keys) to the bill: only a result,
 * that is a 2xx — a 200 whose verdict is UNTRUSTED is a result like any other, and so is a
 * `202` for accepted work. Refusals and failures (4xx, 5xx: 400, 401, 402, 413, 429, 503
 * `overloaded`, a settlement that failed) and `304 Not Modified` (no body) are not.
 */
export function isChargedStatus(status: number): boolean {
  return status >= 200 && status <= 299;
}

export const DAY_MS = 86_400_000;

/** The UTC day of an instant, as days since 1970-01-01. */
export function utcDay(nowMs: number): number {
  return Math.floor(nowMs / DAY_MS);
}

/** Whole seconds from `nowMs` to the next 00:00 UTC, rounded up, at least 1. */
export function secondsToUtcMidnight(nowMs: number): number {
  const next = (utcDay(nowMs) + 1) * DAY_MS;
  return Math.max(1, Math.ceil((next - nowMs) / 1000));
}

/** Caps are whole numbers of requests; 0 refuses everything (a paused key). */
export function checkLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new RangeError(`a daily cap is a whole number ≥ 0, got ${limit}`);
  }
}

/** The decision for a bucket that held `countBefore` requests before this one. */
export function decide(countBefore: number, limit: number, nowMs: number): CapDecision {
  const allowed = countBefore < limit;
  const counted = allowed ? countBefore + 1 : countBefore;
  return {
    allowed,
    limit,
    remaining: Math.max(0, limit - counted),
    resetSeconds: secondsToUtcMidnight(nowMs),
  };
}

/** One bucket a request is counted against, with its cap. */
export interface CapCharge {
  bucket: string;
  limit: number;
}

/** The outcome of counting one request against several buckets at once. */
export interface SharedCapDecision {
  /**
   * The decision the client is shown: when refused, the refusing bucket's; when allowed, the
   * bucket with the fewest requests left (the one that will refuse first).
   */
  decision: CapDecision;
  /** Index in `charges` of the bucket that refused, or null when every one allowed. */
  refusedBy: number | null;
  /** Index in `charges` of the bucket whose decision is shown (`decision`). */
  shownBy: number;
}

/**
 * Counts one request against every bucket of `charges`, in order, or against none: when a
 * bucket refuses, the ones counted before it are given back. A share comes before the pool it
 * is a share of (an address's anonymous share, then the anonymous cap), so a client over its
 * share never spends the pool. Built on `consume`/`refund` alone, so every `CapStore`
 * (memory, Redis, the fallback, and any durable one) does it the same way. Between the count
 * and the refund a refused request holds a unit of the earlier buckets; under concurrency that
 * can refuse a neighbour of the same share a moment early, never admit one too many.
 */
export async function consumeAll(
  store: CapStore,
  charges: readonly CapCharge[],
  nowMs: number,
): Promise<SharedCapDecision> {
  if (charges.length === 0) throw new RangeError("a request is counted against some bucket");
  const counted: string[] = [];
  let shown: CapDecision | null = null;
  let shownBy = 0;
  for (const [index, { bucket, limit }] of charges.entries()) {
    let decision: CapDecision;
    try {
      decision = await store.consume(bucket, limit, nowMs);
    } catch (error) {
      await refundAll(store, counted, nowMs);
      throw error;
    }
    if (!decision.allowed) {
      await refundAll(store, counted, nowMs);
      return { decision, refusedBy: index, shownBy: index };
    }
    counted.push(bucket);
    if (shown === null || decision.remaining < shown.remaining) {
      shown = decision;
      shownBy = index;
    }
  }
  return { decision: shown as CapDecision, refusedBy: null, shownBy };
}

/**
 * Gives back one request counted against each of `buckets` at `nowMs`. A refund that fails
 * leaves its bucket counted (the safe side of a cap) and does not stop the others.
 */
export async function refundAll(
  store: CapStore,
  buckets: readonly string[],
  nowMs: number,
): Promise<void> {
  for (const bucket of buckets) {
    try {
      await store.refund(bucket, nowMs);
    } catch {
      // Stays counted; see above.
    }
  }
}

/**
 * Counts `units` more against `bucket` for work already done (a request charged more than
 * the unit it held: docs/cost-bounds.md), whatever the cap: the work cannot be given back, so
 * the counter may pass the cap and the bucket then refuses until midnight. Built on `consume`
 * with no effective cap, so every store does it. Returns the bucket's count afterwards.
 */
export async function consumeUnits(
  store: CapStore,
  bucket: string,
  units: number,
  nowMs: number,
): Promise<number> {
  let decision: CapDecision | null = null;
  for (let i = 0; i < units; i++) {
    decision = await store.consume(bucket, Number.MAX_SAFE_INTEGER, nowMs);
  }
  return decision === null
    ? await store.count(bucket, nowMs)
    : Number.MAX_SAFE_INTEGER - decision.remaining;
}

/** Every cap is a fixed window of one UTC day: the `w` of `RateLimit-Policy`. */
export const CAP_WINDOW_SECONDS = DAY_MS / 1000;

/**
 * The policy id of the IETF fields (docs/access-decisions.md, "RateLimit fields"): the kind of
 * the bucket shown, never the bucket itself (which names a key id or a payer's address).
 */
export type RateLimitPolicy =
  | "key"
  | "evaluation"
  | "x402"
  | "anonymous"
  | "anonymous-address"
  | "anonymous-network";

/**
 * The headers every response that passed authentication carries: the seed's `X-RateLimit-*`
 * trio (service.md §9) and the same figures as draft-ietf-httpapi-ratelimit-headers-11's
 * structured fields, `RateLimit-Policy` (quota `q` per window `w`) and `RateLimit`
 * (remaining `r`, seconds to reset `t`). The id is an sf-string; the policy ids need no
 * escaping.
 */
export function rateLimitHeaders(
  decision: CapDecision,
  policy: RateLimitPolicy,
): Record<string, string> {
  return {
    "X-RateLimit-Limit": String(decision.limit),
    "X-RateLimit-Remaining": String(decision.remaining),
    "X-RateLimit-Reset": String(decision.resetSeconds),
    "RateLimit-Policy": `"${policy}";q=${decision.limit};w=${CAP_WINDOW_SECONDS}`,
    RateLimit: `"${policy}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

/** `Retry-After` of a 429 is fixed by the contract; `X-RateLimit-Reset` has the exact wait. */
export const CAP_RETRY_AFTER_SECONDS = 86_400;

export interface CapReachedResponse {
  statusCode: 429;
  headers: Record<string, string>;
  body: { error: "daily_cap_reached"; hint: string };
}

/** The refusal of a request over its daily cap, with the rate-limit headers and `Retry-After`. */
export function capReachedResponse(
  decision: CapDecision,
  policy: RateLimitPolicy,
): CapReachedResponse {
  return {
    statusCode: 429,
    headers: {
      ...rateLimitHeaders(decision, policy),
      "Retry-After": String(CAP_RETRY_AFTER_SECONDS),
    },
    body: {
      error: "daily_cap_reached",
      hint: `the daily cap of ${decision.limit} requests is reached; it resets at 00:00 UTC`,
    },
  };
}
