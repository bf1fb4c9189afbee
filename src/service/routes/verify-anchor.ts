/** `POST /verify-anchor` (service.md §1): the body goes, unparsed, to a worker that answers it. */
import type { FastifyInstance } from "fastify";
import { type AnchorReply, type AnchorTask, verifyAnchorBodySchema } from "../anchor-request.js";
import { taskModuleUrl } from "../cpu-pool.js";
import { transferableBody } from "../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../schemas/errors.js";

export const ANCHOR_TASK_MODULE = taskModuleUrl("anchor");

/** An attestation as AnchorResult and stored anchor documents list it (verifier.md §8.2). */
export const attestationSchema = {
  type: "object",
  required: ["kind"],
  properties: {
    kind: { type: "string", enum: ["pending", "bitcoin", "litecoin", "unknown"] },
    value: {
      type: ["string", "integer"],
      description: "calendar URI (pending) or block height (bitcoin, litecoin)",
    },
    tag: { type: "string", description: "hex attestation tag (unknown)" },
    payload: { type: "string", description: "hex payload (unknown)" },
  },
} as const;

const anchorResultSchema = {
  description:
    "the AnchorResult of verifier.md §8.4 plus `service`; only merkle-root equality with the " +
    "supplied headers is checked (no proof-of-work, no header chain)",
  type: "object",
  required: ["status", "code", "detail", "file_digest", "attestations", "service"],
  properties: {
    status: { type: "string", enum: ["verified", "unverified", "mismatch", "invalid"] },
    code: { type: "string" },
    detail: { type: "string" },
    file_digest: {
      type: "string",
      description: "`<hash op>:<hex>`, empty if the proof did not parse",
    },
    attestations: { type: "array", items: attestationSchema },
    confirmed: {
      type: "object",
      description: "present only when verified",
      properties: {
        block_height: { type: "integer" },
        merkle_root: { type: "string" },
        header_time: { type: "integer" },
      },
    },
    service: { type: "string" },
  },
} as const;

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
      const task: AnchorTask = { kind: "verify", body };
      const answer = await app.cpuPool.run<AnchorReply>(ANCHOR_TASK_MODULE, task, [body]);
      return reply
        .code(answer.statusCode)
        .type("application/json; charset=utf-8")
        .send(answer.json);
    },
  );
}
