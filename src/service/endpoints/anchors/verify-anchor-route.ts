/** `POST /verify-anchor` (service.md §1): the body goes, unparsed, to a worker that answers it. */
import type { FastifyInstance } from "fastify";
import { sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { anchorResultSchema, verifyAnchorBodySchema } from "../../schemas/anchor.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { verifyAnchorTask } from "./tasks.js";

const verifyAnchorSchema = {
  description:
    "Verifies a detached OpenTimestamps proof against a digest and optional Bitcoin block headers",
  body: verifyAnchorBodySchema,
  response: {
    200: anchorResultSchema,
    400: {
      ...errorResponseSchema,
      description:
        "invalid_json, bad_request, invalid_proof_encoding, invalid_header_encoding or invalid_height",
    },
    ...commonErrorResponses,
  },
} as const;

export async function verifyAnchorRoutes(app: FastifyInstance) {
  app.post(
    "/verify-anchor",
    { schema: verifyAnchorSchema, config: { access: "keyed" } },
    async (request, reply) => {
      const body = transferableBody(request.body);
      return sendAnswer(
        reply,
        await app.cpuPool.run(verifyAnchorTask, { body }, [body], {
          clientGone: clientGone(reply),
        }),
      );
    },
  );
}
