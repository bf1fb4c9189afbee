/** `POST /verify-receipt` (service.md §1): the body goes, unparsed, to a worker that answers it. */

import type { FastifyInstance } from "fastify";
import { sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { type VerifyReceiptTask, verifyReceiptBodySchema } from "./answer.js";
import { verifyReceiptTask } from "./tasks.js";

const verifyReceiptSchema = {
  description:
    "checks a verification receipt (verifier.md §6.2): its shape, its signature by its issuer, " +
    "optionally that it describes a given bundle and that its issuer key was not revoked",
  body: verifyReceiptBodySchema,
  response: {
    200: {
      description:
        "the ReceiptCheck; `issuer`, `verdict`, `verified_at` and `bundle_digest` are echoed " +
        "from the receipt as they are (null when absent)",
      type: "object",
      required: [
        "valid",
        "errors",
        "issuer",
        "verdict",
        "verified_at",
        "bundle_digest",
        "digest_match",
        "service",
      ],
      properties: {
        valid: { type: "boolean" },
        errors: { type: "array", items: { type: "string" }, description: "in check order" },
        issuer: {},
        verdict: {},
        verified_at: {},
        bundle_digest: {},
        digest_match: {
          type: ["boolean", "null"],
          description: "null when no bundle was given",
        },
        service: { type: "string" },
      },
    },
    400: errorResponseSchema,
    ...commonErrorResponses,
  },
} as const;

export async function verifyReceiptRoutes(app: FastifyInstance) {
  app.post(
    "/verify-receipt",
    { schema: verifyReceiptSchema, config: { access: "keyed" } },
    async (request, reply) => {
      const body = transferableBody(request.body);
      const task: VerifyReceiptTask = { body };
      return sendAnswer(
        reply,
        await app.cpuPool.run(verifyReceiptTask, task, [body], { clientGone: clientGone(reply) }),
      );
    },
  );
}
