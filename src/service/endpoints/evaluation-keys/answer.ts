/**
 * The request handling of the evaluation-key routes: the strict parse of `POST
 * /keys/evaluation`'s body, the answers, and the refusals with their codes. There is no
 * worker: the body is at most `ISSUE_BODY_LIMIT` bytes and the work is one SHA-256 and one
 * HMAC, less than a hop to a worker thread would cost, and the rest is store I/O, which the
 * main thread does anyway.
 */
import type { CreatedKey } from "../../../access/api-keys.js";
import type { IssuedChallenge } from "../../../access/evaluation/challenges.js";
import type { IssueRefusal } from "../../../access/evaluation/issuer.js";
import { PROOF_OF_WORK_ALGORITHM } from "../../../portable/proof-of-work.js";
import { bodyValidator } from "../../../validation/body-validator.js";
import { isObject } from "../../../verifier/json/value.js";
import { formatUtcSeconds } from "../../../verifier/timestamps.js";
import { type ErrorCode, parseRequestJson, ServiceError } from "../../errors.js";
import { issueBodySchema, PROOF_OF_WORK_RULE } from "./contract.js";

/** `{"challenge","nonce"}` is well under 400 bytes; anything near this is not one. */
export const ISSUE_BODY_LIMIT = 4096;

const validateIssueBody = bodyValidator(issueBodySchema);

export interface IssueBody {
  challenge: string;
  nonce: string;
}

/** The strictly parsed body, or `invalid_json` / `bad_shape`. */
export function parseIssueBody(bytes: Uint8Array): IssueBody {
  const body = parseRequestJson(bytes);
  const problem = validateIssueBody(body);
  if (problem !== null || !isObject(body)) {
    throw new ServiceError("bad_shape", { detail: problem ?? "body must be an object" });
  }
  return { challenge: body.get("challenge") as string, nonce: body.get("nonce") as string };
}

export function disabledRefusal(): ServiceError {
  return new ServiceError("evaluation_keys_disabled", {
    detail:
      "this service does not issue evaluation keys (EVALUATION_KEYS=off); ask its operator for an API key",
  });
}

export function challengeAnswer(issued: IssuedChallenge) {
  return {
    challenge: issued.challenge,
    algorithm: PROOF_OF_WORK_ALGORITHM,
    difficulty: issued.difficulty,
    expires_at: formatUtcSeconds(new Date(issued.expiresAt * 1000)),
  };
}

export function issuedKeyAnswer({ key, record }: CreatedKey) {
  return {
    key,
    id: record.id,
    name: record.name,
    kind: "evaluation",
    daily_cap: record.dailyCap,
    created_at: record.createdAt,
    expires_at: record.expiresAt,
    note:
      "Shown only now: the service keeps only the key's SHA-256. Send it as " +
      `'Authorization: Bearer <key>' or 'X-SVC-Key: <key>'. At most ${record.dailyCap} calls per ` +
      "UTC day until expires_at, then 401 key_expired. Evaluation keys are never billed.",
  };
}

type Scope = "address" | "network" | "overall";

const DETAILS: Record<IssueRefusal["code"], (limit: number, scope: Scope) => string> = {
  invalid_challenge: () =>
    "the challenge was not issued by this service or was altered; get a new one from GET /keys/evaluation/challenge",
  challenge_expired: () =>
    "the challenge expired; get a new one from GET /keys/evaluation/challenge",
  insufficient_proof_of_work: () => `the nonce does not solve the challenge: ${PROOF_OF_WORK_RULE}`,
  challenge_already_used: () =>
    "this challenge was already spent; each challenge buys at most one key",
  evaluation_limit_reached: (limit, scope) =>
    scope === "network"
      ? `this client's network (IPv4 /24, IPv6 /48) has obtained ${limit} evaluation key(s) today, the limit; more after 00:00 UTC`
      : `this client address has obtained ${limit} evaluation key(s) today, the limit; more after 00:00 UTC`,
  evaluation_keys_exhausted: (limit) =>
    `the service has issued ${limit} evaluation keys today, the limit; more after 00:00 UTC`,
};

/** The refusal of an issuance, and the `Retry-After` it comes with (the two daily limits). */
export function issueRefusal(refusal: IssueRefusal): {
  error: ServiceError;
  retryAfterSeconds: number | null;
} {
  const code: ErrorCode = refusal.code;
  if ("limit" in refusal) {
    return {
      error: new ServiceError(code, {
        detail: DETAILS[refusal.code](refusal.limit, refusal.scope),
        limit: refusal.limit,
      }),
      retryAfterSeconds: refusal.retryAfterSeconds,
    };
  }
  return {
    error: new ServiceError(code, { detail: DETAILS[refusal.code](0, "overall") }),
    retryAfterSeconds: null,
  };
}
