/**
 * Self-served evaluation keys for the page's "Evaluation key" tab (docs/evaluation-keys.md):
 * the terms `/info` states, the flow (a challenge, the proof of work solved here, the key),
 * and every refusal in plain words with its exact code.
 *
 * No DOM here, and the network comes in as a `fetch` argument, so the tests run this module
 * under Node against a fake service as well. The key is returned to the caller and kept
 * nowhere by this module.
 */
import {
  PROOF_OF_WORK_ALGORITHM,
  parseChallenge,
  type Sha256,
  solveProofOfWorkAsync,
} from "../portable/proof-of-work.js";

/** `/info` `evaluation_keys`, as the page uses it. */
export interface EvaluationTerms {
  keyDailyCap: number;
  keyLifetimeHours: number;
  keysPerAddressDaily: number;
  keysPerDay: number;
  /** Keys per IPv4 /24 (IPv6 /48) a day, or null from a service that does not say. */
  keysPerNetworkDaily: number | null;
  /** What a challenge asks now; the challenge itself states what it is checked at. */
  difficulty: number;
  /** Bits the difficulty rises by as the day's keys run out (0 from a service without). */
  rampBits: number;
  challengeTtlSeconds: number;
}

export type TermsState =
  | { state: "on"; terms: EvaluationTerms }
  /** `evaluation_keys: null`: the operator switched the feature off. */
  | { state: "off" }
  /** `/info` has no usable `evaluation_keys` (a service from before the feature, say). */
  | { state: "unknown" };

function wholeNumber(value: unknown, min = 0): number | null {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= min ? value : null;
}

/** Reads `evaluation_keys` of a parsed `/info` answer. */
export function evaluationTermsOf(info: Record<string, unknown>): TermsState {
  if (!Object.hasOwn(info, "evaluation_keys")) return { state: "unknown" };
  const section = info.evaluation_keys;
  if (section === null) return { state: "off" };
  if (typeof section !== "object" || Array.isArray(section)) return { state: "unknown" };
  const terms = section as Record<string, unknown>;
  const work =
    typeof terms.proof_of_work === "object" && terms.proof_of_work !== null
      ? (terms.proof_of_work as Record<string, unknown>)
      : {};
  const read = {
    keyDailyCap: wholeNumber(terms.key_daily_cap, 1),
    keyLifetimeHours: wholeNumber(terms.key_lifetime_hours, 1),
    keysPerAddressDaily: wholeNumber(terms.keys_per_address_daily, 1),
    keysPerDay: wholeNumber(terms.keys_per_day, 1),
    difficulty: wholeNumber(work.difficulty),
    challengeTtlSeconds: wholeNumber(work.challenge_ttl_s, 1),
  };
  if (work.algorithm !== PROOF_OF_WORK_ALGORITHM) return { state: "unknown" };
  for (const value of Object.values(read)) if (value === null) return { state: "unknown" };
  // Later additions, optional so the page still reads a service from before them.
  return {
    state: "on",
    terms: {
      ...(read as Omit<EvaluationTerms, "keysPerNetworkDaily" | "rampBits">),
      keysPerNetworkDaily: wholeNumber(terms.keys_per_network_daily, 1),
      rampBits: wholeNumber(work.ramp_bits) ?? 0,
    },
  };
}

/** "1 key", "2 keys". */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString("en")} ${count === 1 ? one : many}`;
}

/** A wait in words: "45 seconds", "3 minutes", "13 h 20 min", "1 day". */
export function formatWait(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 90) return plural(s, "second");
  const minutes = Math.round(s / 60);
  if (minutes < 90) return plural(minutes, "minute");
  if (s >= 86_400 && s % 86_400 === 0) return plural(s / 86_400, "day");
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `${hours} h` : `${hours} h ${rest} min`;
}

/** `2026-01-02T13:30:00Z` → `2026-01-02 13:30 UTC` (seconds dropped when they are 0). */
export function formatUtc(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  const seconds = iso.slice(17, 19);
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}${seconds === "00" ? "" : `:${seconds}`} UTC`;
}

/** The key as `POST /keys/evaluation` answered it (201). */
export interface IssuedKey {
  key: string;
  id: string;
  name: string;
  dailyCap: number;
  createdAt: string;
  expiresAt: string;
  note: string;
}

/** A refusal, in words for people and with what tools compare: the status and the code. */
export interface Refusal {
  status: number;
  /** The service's `error` code, or `HTTP <status>` when the answer named none. */
  code: string;
  /** What happened and what to do, in plain words. */
  words: string;
  /** The service's own `detail` or `hint`, when it gave one. */
  detail: string | null;
  /** `Retry-After`, in seconds, when the answer had one. */
  retryAfterSeconds: number | null;
  /** Whether trying again now (with a new challenge) can succeed. */
  tryAgainNow: boolean;
}

export type KeyRequestStep = "challenge" | "work" | "issue";

export type KeyRequestOutcome =
  | { kind: "issued"; key: IssuedKey }
  | { kind: "refused"; step: "challenge" | "issue"; refusal: Refusal }
  /** No answer: offline, or the service is down. */
  | { kind: "unreachable"; step: "challenge" | "issue" }
  /** The challenge expired before the work was done (no request was spent on it). */
  | { kind: "too_slow"; difficulty: number; attempts: number }
  | { kind: "cancelled"; step: KeyRequestStep }
  /** An answer the page cannot use (not the documented shape). */
  | { kind: "unexpected"; step: "challenge" | "issue"; status: number; why: string };

export interface KeyRequestOptions {
  fetch: typeof fetch;
  sha256: Sha256;
  signal?: AbortSignal;
  /** Told when a step starts; `difficulty` with "work". */
  onStep?: (step: KeyRequestStep, difficulty?: number) => void;
  /** Hashes tried so far, after each batch of the proof of work. */
  onProgress?: (attempts: number) => void;
  /** Attempts between two yields to the page (the solver's default when absent). */
  batch?: number;
  /** The clock, in ms (Date.now). */
  now?: () => number;
}

const REQUEST: RequestInit = { cache: "no-store", credentials: "omit" };

/** Words for each refusal of the two routes (docs/evaluation-keys.md), by code. */
function refusalWords(
  code: string,
  status: number,
  limit: number | null,
  wait: string | null,
): { words: string; tryAgainNow: boolean } {
  const later = wait === null ? "" : ` Try again in ${wait}.`;
  switch (code) {
    case "evaluation_limit_reached":
      return {
        words:
          `This address has already had ${limit === null ? "its evaluation keys" : plural(limit, "evaluation key")} ` +
          `today, the most one address may get per UTC day.${wait === null ? " More from 00:00 UTC." : ` More in ${wait}, from 00:00 UTC.`}`,
        tryAgainNow: false,
      };
    case "evaluation_keys_exhausted":
      return {
        words:
          `The service has issued ${limit === null ? "all the evaluation keys" : `the ${plural(limit, "evaluation key")}`} ` +
          `it hands out per UTC day, for everyone together.${wait === null ? " More from 00:00 UTC." : ` More in ${wait}, from 00:00 UTC.`}`,
        tryAgainNow: false,
      };
    case "daily_cap_reached":
      return {
        words: `The service's daily allowance of calls without a key is used up, so it issues no key now.${later}`,
        tryAgainNow: false,
      };
    case "evaluation_keys_disabled":
      return {
        words:
          "This service does not issue evaluation keys: its operator switched them off. Ask the operator for an API key.",
        tryAgainNow: false,
      };
    case "challenge_expired":
      return {
        words:
          "The challenge expired before it reached the service. Try again: a new challenge is fetched.",
        tryAgainNow: true,
      };
    case "challenge_already_used":
      return {
        words:
          "This challenge was already spent (each buys at most one key). Try again: a new challenge is fetched.",
        tryAgainNow: true,
      };
    case "invalid_challenge":
      return {
        words:
          "The service did not recognise the challenge as one it issued (it may have been restarted with a new secret). Try again: a new challenge is fetched.",
        tryAgainNow: true,
      };
    case "insufficient_proof_of_work":
      return {
        words:
          "The service found the proof of work incomplete. Try again; if it happens again, this page and the service disagree on the rule: please report it.",
        tryAgainNow: true,
      };
    case "invalid_json":
    case "bad_shape":
    case "body_too_large":
      return {
        words:
          "The service could not read the page's request. This is a fault of the page, not yours: please report it with the code below.",
        tryAgainNow: false,
      };
    case "challenge_ledger_unavailable":
      return {
        words: `The service cannot check right now whether the challenge was used before, so it issues no key.${later || " Try again in a moment."}`,
        tryAgainNow: true,
      };
    case "store_unavailable":
      return {
        words: `The service cannot store new keys right now; nothing was issued or counted.${later || " Try again in a moment."}`,
        tryAgainNow: true,
      };
    case "overloaded":
    case "too_many_connections":
      return {
        words: `The service is busy.${later || " Try again in a moment."}`,
        tryAgainNow: true,
      };
    default:
      return {
        words:
          status >= 500
            ? `The service failed to answer (HTTP ${status}).${later || " Try again in a moment."}`
            : `The service refused the request (HTTP ${status}).${later}`,
        tryAgainNow: status >= 500,
      };
  }
}

/** A refusal from its status, its parsed body (if JSON) and its `Retry-After` header. */
export function describeRefusal(status: number, body: unknown, retryAfter: string | null): Refusal {
  const fields =
    typeof body === "object" && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : {};
  const code = typeof fields.error === "string" ? fields.error : `HTTP ${status}`;
  const detail =
    typeof fields.detail === "string"
      ? fields.detail
      : typeof fields.hint === "string"
        ? fields.hint
        : null;
  const limit = wholeNumber(fields.limit);
  const retryAfterSeconds =
    retryAfter !== null && /^\d{1,10}$/.test(retryAfter.trim()) ? Number(retryAfter.trim()) : null;
  const wait = retryAfterSeconds === null ? null : formatWait(retryAfterSeconds);
  const { words, tryAgainNow } = refusalWords(code, status, limit, wait);
  return { status, code, words, detail, retryAfterSeconds, tryAgainNow };
}

async function jsonOf(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return null;
  }
}

function issuedKeyOf(body: unknown): IssuedKey | null {
  if (typeof body !== "object" || body === null) return null;
  const b = body as Record<string, unknown>;
  const strings = [b.key, b.id, b.name, b.created_at, b.expires_at, b.note];
  if (!strings.every((value) => typeof value === "string")) return null;
  if (b.kind !== "evaluation" || wholeNumber(b.daily_cap, 1) === null) return null;
  if ((b.key as string).length === 0 || Number.isNaN(Date.parse(b.expires_at as string)))
    return null;
  return {
    key: b.key as string,
    id: b.id as string,
    name: b.name as string,
    dailyCap: b.daily_cap as number,
    createdAt: b.created_at as string,
    expiresAt: b.expires_at as string,
    note: b.note as string,
  };
}

function aborted(signal: AbortSignal | undefined, error: unknown): boolean {
  return signal?.aborted === true || (error instanceof Error && error.name === "AbortError");
}

/**
 * `GET /keys/evaluation/challenge`, the proof of work (yielding to the page between batches),
 * then `POST /keys/evaluation`. The work stops when the challenge expires (by the service's
 * clock, from its `Date` header, so a wrong clock here does not matter) or on `signal`.
 * Once the key is asked for, `signal` no longer stops the request: the key may already be
 * issued and counted, and it would be lost.
 */
export async function requestEvaluationKey(options: KeyRequestOptions): Promise<KeyRequestOutcome> {
  const { signal } = options;
  const now = options.now ?? Date.now;

  options.onStep?.("challenge");
  let response: Response;
  try {
    response = await options.fetch("/keys/evaluation/challenge", { ...REQUEST, signal });
  } catch (error) {
    if (aborted(signal, error)) return { kind: "cancelled", step: "challenge" };
    return { kind: "unreachable", step: "challenge" };
  }
  const body = await jsonOf(response);
  if (response.status !== 200) {
    return {
      kind: "refused",
      step: "challenge",
      refusal: describeRefusal(response.status, body, response.headers.get("retry-after")),
    };
  }
  const answer = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const challenge = typeof answer.challenge === "string" ? answer.challenge : "";
  const fields = parseChallenge(challenge);
  const difficulty = wholeNumber(answer.difficulty);
  if (
    answer.algorithm !== PROOF_OF_WORK_ALGORITHM ||
    fields === null ||
    difficulty !== fields.difficulty
  ) {
    return {
      kind: "unexpected",
      step: "challenge",
      status: response.status,
      why: "the challenge is not in the documented form",
    };
  }
  // How long the challenge lasts, by the service's clock; then on this page's clock.
  const served = Date.parse(response.headers.get("date") ?? "");
  const lifetimeMs = fields.expiresAt * 1000 - (Number.isNaN(served) ? now() : served);
  const deadline = now() + lifetimeMs;

  options.onStep?.("work", difficulty);
  const work = new AbortController();
  const stop = () => work.abort(signal?.reason);
  signal?.addEventListener("abort", stop, { once: true });
  let attempts = 0;
  let nonce: string;
  try {
    nonce = await solveProofOfWorkAsync(options.sha256, challenge, difficulty, {
      signal: work.signal,
      ...(options.batch === undefined ? {} : { batch: options.batch }),
      onProgress: (tried) => {
        attempts = tried;
        options.onProgress?.(tried);
        if (now() >= deadline) work.abort(new Error("the challenge expired"));
      },
    });
  } catch (error) {
    if (signal?.aborted === true) return { kind: "cancelled", step: "work" };
    if (work.signal.aborted) return { kind: "too_slow", difficulty, attempts };
    throw error;
  } finally {
    signal?.removeEventListener("abort", stop);
  }
  if (signal?.aborted === true) return { kind: "cancelled", step: "work" };

  options.onStep?.("issue");
  try {
    response = await options.fetch("/keys/evaluation", {
      ...REQUEST,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ challenge, nonce }),
    });
  } catch {
    return { kind: "unreachable", step: "issue" };
  }
  const issuedBody = await jsonOf(response);
  if (response.status !== 201) {
    return {
      kind: "refused",
      step: "issue",
      refusal: describeRefusal(response.status, issuedBody, response.headers.get("retry-after")),
    };
  }
  const key = issuedKeyOf(issuedBody);
  if (key === null) {
    return {
      kind: "unexpected",
      step: "issue",
      status: response.status,
      why: "the answer is not the documented key",
    };
  }
  return { kind: "issued", key };
}
