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
import { route } from "../operation.js";
import {
  challengeAnswer,
  disabledRefusal,
  ISSUE_BODY_LIMIT,
  issuedKeyAnswer,
  issueRefusal,
  parseIssueBody,
} from "./answer.js";
import { getEvaluationChallengeOperation, issueEvaluationKeyOperation } from "./contract.js";

const NO_STORE = "no-store";

function noStore(reply: FastifyReply): FastifyReply {
  return reply.header("cache-control", NO_STORE);
}

export async function evaluationKeyRoutes(app: FastifyInstance) {
  const { evaluation } = app.accessServices;

  route(app, getEvaluationChallengeOperation, {
    handler: async (_request, reply) => {
      noStore(reply);
      if (evaluation === null) throw disabledRefusal();
      return challengeAnswer(await evaluation.challenge());
    },
  });

  route(app, issueEvaluationKeyOperation, {
    bodyLimit: ISSUE_BODY_LIMIT,
    handler: async (request, reply) => {
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
  });
}
