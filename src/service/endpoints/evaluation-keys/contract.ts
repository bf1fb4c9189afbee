/**
 * The contract of self-served evaluation keys, in one place: the two operations, their
 * requests and answers, and the `evaluation_keys` section of `/info`, which states the same
 * terms. The OpenAPI document is generated from them (docs/evaluation-keys.md explains the
 * flow). No worker: a body of at most 4 KiB, one SHA-256 and one HMAC, then store I/O.
 */
import type { EvaluationKeys } from "../../../access/evaluation/issuer.js";
import { MAX_DIFFICULTY, PROOF_OF_WORK_ALGORITHM } from "../../../portable/proof-of-work.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import type { InfoSection } from "../info-section.js";
import { defineOperation } from "../operation.js";

const NONCE_PATTERN = "^[A-Za-z0-9_-]{1,64}$";
const UTC_SECONDS = "RFC 3339 UTC, whole seconds";

/** How the work is checked, as `/info` and the challenge route describe it. */
export const PROOF_OF_WORK_RULE =
  "find a nonce (1–64 characters of A–Z a–z 0–9 - _) such that SHA-256 of the ASCII bytes of " +
  "challenge followed directly by the ASCII bytes of nonce starts with `difficulty` zero bits";

const challengeSchema = {
  type: "object",
  description: "a proof-of-work challenge: solve it, then spend it once on POST /keys/evaluation",
  required: ["challenge", "algorithm", "difficulty", "expires_at"],
  properties: {
    challenge: {
      type: "string",
      description:
        "`evk1.<difficulty>.<expires, Unix s>.<salt>.<HMAC>`, opaque to the client but for " +
        "the work; signed by the service, so nothing is stored until it is spent",
    },
    algorithm: { type: "string", enum: [PROOF_OF_WORK_ALGORITHM] },
    difficulty: {
      type: "integer",
      minimum: 0,
      maximum: MAX_DIFFICULTY,
      description: "leading zero bits SHA-256(challenge ‖ nonce) must have",
    },
    expires_at: { type: "string", description: `when the challenge is refused (${UTC_SECONDS})` },
  },
} as const;

export const issueBodySchema = {
  type: "object",
  description: "a solved challenge",
  required: ["challenge", "nonce"],
  additionalProperties: false,
  properties: {
    challenge: {
      type: "string",
      maxLength: 256,
      description: "as GET /keys/evaluation/challenge returned it",
    },
    nonce: { type: "string", pattern: NONCE_PATTERN, description: PROOF_OF_WORK_RULE },
  },
} as const;

const issuedKeySchema = {
  type: "object",
  description:
    "the evaluation key, shown only in this answer (the service keeps its SHA-256), with its terms",
  required: ["key", "id", "name", "kind", "daily_cap", "created_at", "expires_at", "note"],
  properties: {
    key: {
      type: "string",
      description: "`svc_` + 48 hex digits; send it as `Authorization: Bearer` or `X-SVC-Key`",
    },
    id: { type: "string", description: "the key's id (12 hex digits of its SHA-256)" },
    name: { type: "string", description: "`evaluation-<id>`, as `receiptd keys list` shows it" },
    kind: { type: "string", enum: ["evaluation"] },
    daily_cap: { type: "integer", description: "calls per UTC day" },
    created_at: { type: "string", description: UTC_SECONDS },
    expires_at: {
      type: "string",
      description: `after it the key is refused with 401 key_expired (${UTC_SECONDS})`,
    },
    note: { type: "string", description: "the terms in words" },
  },
} as const;

/** `/info` `evaluation_keys`: null when the feature is off. */
export const evaluationTermsSchema = {
  type: ["object", "null"],
  description:
    "self-served evaluation keys: how to get one and its terms; null when the operator switched them off",
  properties: {
    challenge: { type: "string", description: "where to get a proof-of-work challenge" },
    issue: { type: "string", description: "where to spend it for a key" },
    key_daily_cap: { type: "integer", description: "calls per UTC day of one evaluation key" },
    key_lifetime_hours: { type: "integer" },
    keys_per_address_daily: {
      type: "integer",
      description: "keys one client address (IPv6: /64) may obtain per UTC day",
    },
    keys_per_network_daily: {
      type: "integer",
      description: "keys the addresses of one IPv4 /24 (IPv6 /48) may obtain together per UTC day",
    },
    keys_per_day: { type: "integer", description: "keys issued per UTC day, all clients" },
    proof_of_work: {
      type: "object",
      properties: {
        algorithm: { type: "string" },
        difficulty: {
          type: "integer",
          description: "what a challenge asks now; it rises as the day's issuance fills",
        },
        base_difficulty: { type: "integer", description: "the day's first challenges" },
        ramp_bits: { type: "integer", description: "bits added by the time the day is full" },
        ramp: { type: "string" },
        rule: { type: "string" },
        challenge_ttl_s: { type: "integer" },
      },
    },
    counted_against: { type: "string" },
    billing: { type: "string" },
  },
} as const;

const disabledResponse = {
  ...errorResponseSchema,
  description: "`evaluation_keys_disabled`: the operator switched evaluation keys off",
};

const challengeRouteSchema = {
  description:
    "A proof-of-work challenge for an evaluation key (no key needed; one anonymous call): " +
    `${PROOF_OF_WORK_RULE}, then POST it with the nonce to /keys/evaluation before it expires.`,
  response: {
    200: challengeSchema,
    404: disabledResponse,
    ...commonErrorResponses,
  },
} as const;

const issueRouteSchema = {
  description:
    "Issues an evaluation API key at once for a solved challenge (no key needed; one anonymous " +
    "call). The key is shown only in this answer, works for a limited time with a small daily " +
    "cap, and is never billed; each client address may obtain a few per UTC day.",
  body: issueBodySchema,
  response: {
    201: issuedKeySchema,
    400: {
      ...errorResponseSchema,
      description:
        "`bad_shape`, `invalid_challenge` (not issued here, or altered), `challenge_expired`, " +
        "`insufficient_proof_of_work`",
    },
    404: disabledResponse,
    409: { ...errorResponseSchema, description: "`challenge_already_used`: spend each once" },
    429: {
      ...errorResponseSchema,
      description:
        "`evaluation_limit_reached` (this client address's keys today), " +
        "`evaluation_keys_exhausted` (all keys today); `limit` is the limit, `Retry-After` the " +
        "seconds to 00:00 UTC",
    },
    503: {
      ...errorResponseSchema,
      description:
        "`challenge_ledger_unavailable` (spent challenges cannot be checked), `store_unavailable`",
    },
    500: commonErrorResponses[500],
  },
} as const;

export const getEvaluationChallengeOperation = defineOperation({
  method: "GET",
  url: "/keys/evaluation/challenge",
  operationId: "getEvaluationChallenge",
  summary: "Get a proof-of-work challenge for an evaluation key",
  tag: "keys",
  access: "anonymous",
  refusals: ["evaluation_keys_disabled"],
  schema: challengeRouteSchema,
});

export const issueEvaluationKeyOperation = defineOperation({
  method: "POST",
  url: "/keys/evaluation",
  operationId: "issueEvaluationKey",
  summary: "Issue an evaluation key for a solved challenge",
  tag: "keys",
  access: "anonymous",
  refusals: [
    "bad_shape",
    "invalid_challenge",
    "challenge_expired",
    "insufficient_proof_of_work",
    "evaluation_keys_disabled",
    "challenge_already_used",
    "evaluation_limit_reached",
    "evaluation_keys_exhausted",
    "store_unavailable",
    "challenge_ledger_unavailable",
  ],
  schema: issueRouteSchema,
});

/**
 * What `/info` says of evaluation keys (null when they are off). `difficulty` is what a
 * challenge asks at this moment (the day's issuance read from the cap store); the challenge
 * itself states the difficulty it is checked at.
 */
export async function evaluationTerms(evaluation: EvaluationKeys | null) {
  if (evaluation === null) return null;
  const { terms } = evaluation;
  return {
    challenge: "GET /keys/evaluation/challenge",
    issue: 'POST /keys/evaluation {"challenge","nonce"}',
    key_daily_cap: terms.keyDailyCap,
    key_lifetime_hours: terms.ttlHours,
    keys_per_address_daily: terms.perAddressDaily,
    keys_per_network_daily: terms.perNetworkDaily,
    keys_per_day: terms.perDay,
    proof_of_work: {
      algorithm: PROOF_OF_WORK_ALGORITHM,
      difficulty: await evaluation.currentDifficulty(),
      base_difficulty: terms.powBits,
      ramp_bits: terms.powRampBits,
      ramp:
        "difficulty = base_difficulty + floor(ramp_bits × keys issued today / keys_per_day), " +
        "at most 32; each challenge states its own",
      rule: PROOF_OF_WORK_RULE,
      challenge_ttl_s: evaluation.challengeTtlSeconds,
    },
    counted_against:
      "the anonymous daily cap: the challenge and the issuance are one anonymous call each",
    billing: "never billed; keys are shown once and stored only as their SHA-256",
  };
}

/** `/info`'s `evaluation_keys` section: null while evaluation keys are off. */
export const evaluationKeysInfoSection: InfoSection<Awaited<ReturnType<typeof evaluationTerms>>> = (
  app,
) => evaluationTerms(app.accessServices.evaluation);
