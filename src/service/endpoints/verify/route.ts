/**
 * `POST /verify` (service.md §1): the body goes, unparsed, to the shared bundle verification
 * (`verification/bundle-verifications.ts`: the digest cache, then a worker that answers it).
 */

import type { FastifyInstance } from "fastify";
import { sendAnswer } from "../../errors.js";
import { fairShareKey } from "../../fair-share.js";
import { clientGone } from "../../http/client-gone.js";
import { authorisedUnits } from "../../plugins/access.js";
import { rawBody } from "../../plugins/raw-body.js";
import { route } from "../operation.js";
import { verifyOperation } from "./contract.js";

interface VerifyQuery {
  require_anchor?: unknown;
  receipt?: unknown;
  cache?: unknown;
}

/**
 * Boolean query flags are parsed, not searched for (service.md §0): only `1` and `true`
 * enable. A repeated flag arrives as an array and, being neither, disables.
 */
export function queryFlag(value: unknown): boolean {
  return value === "1" || value === "true";
}

export async function verifyRoutes(app: FastifyInstance) {
  route<{ Querystring: VerifyQuery }>(app, verifyOperation, {
    // A paid retry with the same Idempotency-Key gets the first answer, settled once.
    config: { idempotent: "paid" },
    handler: async (request, reply) => {
      const answer = await app.bundleVerifications.verify(
        rawBody(request.body),
        {
          requireAnchor: queryFlag(request.query.require_anchor),
          receipt: queryFlag(request.query.receipt),
          cache: queryFlag(request.query.cache),
          authorisedUnits: authorisedUnits(request),
        },
        { clientGone: clientGone(reply), principal: fairShareKey(request) },
      );
      return sendAnswer(reply, answer);
    },
  });
}
