/**
 * `GET /keys/evaluation/challenge` and `POST /keys/evaluation` (docs/evaluation-keys.md):
 * self-served evaluation keys for anyone who solves a small proof of work, within a daily
 * limit per client address and overall. Both routes are `anonymous`: no key is needed or
 * read, and each call counts against the anonymous daily cap. Answers carry
 * `Cache-Control: no-store` (one holds a key in clear, the other a single-use challenge).
 * Nothing here is logged besides the access plugin's content-free line.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { IssueOutcome } from "../../../access/evaluation/issuer.js";
import { refusalFor, withRetryAfter } from "../../library-errors.js";
import { rawBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import {
  challengeAnswer,
  disabledRefusal,
  ISSUE_BODY_LIMIT,
  issuedKeyAnswer,
  issueRefusal,
  parseIssueBody,
} from "./answer.js";
import {
  challengeSchema,
  issueBodySchema,
  issuedKeySchema,
  PROOF_OF_WORK_RULE,
} from "./schemas.js";

const NO_STORE = "no-store";

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

function noStore(reply: FastifyReply): FastifyReply {
  return reply.header("cache-control", NO_STORE);
}

export async function evaluationKeyRoutes(app: FastifyInstance) {
  const { evaluation } = app.accessServices;

  app.get(
    "/keys/evaluation/challenge",
    { schema: challengeRouteSchema, config: { access: "anonymous" } },
    async (_request, reply) => {
      noStore(reply);
      if (evaluation === null) throw disabledRefusal();
      return challengeAnswer(await evaluation.challenge());
    },
  );

  app.post(
    "/keys/evaluation",
    {
      schema: issueRouteSchema,
      config: { access: "anonymous" },
      bodyLimit: ISSUE_BODY_LIMIT,
    },
    async (request, reply) => {
      noStore(reply);
      if (evaluation === null) throw disabledRefusal();
      const { challenge, nonce } = parseIssueBody(rawBody(request.body));
      let outcome: IssueOutcome;
      try {
        outcome = await evaluation.issue({ challenge, nonce, clientAddress: request.ip });
      } catch (error) {
        const refusal = refusalFor(error, {
          detail: "spent challenges cannot be checked right now; retry shortly",
        });
        if (refusal?.code !== "challenge_ledger_unavailable") throw error;
        throw withRetryAfter(reply, refusal);
      }
      if (!outcome.ok) {
        const { error, retryAfterSeconds } = issueRefusal(outcome.refusal);
        if (retryAfterSeconds !== null) reply.header("retry-after", String(retryAfterSeconds));
        throw error;
      }
      return reply.code(201).send(issuedKeyAnswer(outcome.created));
    },
  );
}
