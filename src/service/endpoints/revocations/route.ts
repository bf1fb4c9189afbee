/**
 * `GET /revocations/{issuer}` (service.md §3): an issuer's revocation document, served as
 * stored, and only once it has been validated (on a worker, remembered per stored bytes).
 */
import type { FastifyInstance } from "fastify";
import { lookupRevocationDocument } from "../../../revocations/documents.js";
import { errorAnswer, sendAnswer } from "../../errors.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { revocationDocumentSchema } from "../../schemas/revocation-document.js";
import { revocationDocumentCheckOn } from "./tasks.js";

const revocationsSchema = {
  description:
    "The issuer's revocation document (verifier.md §7): self-signed statements revoking the issuer's key, " +
    "each validated before it is served. Conditional requests with `If-None-Match` are answered 304.",
  params: {
    type: "object",
    required: ["issuer"],
    properties: {
      issuer: { type: "string", description: "the issuer's did:key (`:` may be percent-encoded)" },
    },
  },
  response: {
    200: revocationDocumentSchema,
    304: { description: "the client's copy (named by `If-None-Match`) is current", type: "null" },
    404: {
      ...errorResponseSchema,
      description:
        "`no_document`: the issuer has no document, whatever its form (only an Ed25519 " +
        "did:key can have one)",
    },
    ...commonErrorResponses,
  },
} as const;

export async function revocationRoutes(app: FastifyInstance) {
  const check = revocationDocumentCheckOn(app.cpuPool);
  app.get<{ Params: { issuer: string } }>(
    "/revocations/:issuer",
    { schema: revocationsSchema, config: { access: "keyless" } },
    async (request, reply) => {
      const found = await lookupRevocationDocument(app.documentStore, request.params.issuer, check);
      switch (found.status) {
        case "found":
          return sendStoredDocument(request, reply, found.bytes, { etag: found.etag });
        case "not_found":
          return sendAnswer(reply, errorAnswer("no_document"));
        case "invalid":
          request.log.error("stored revocation document failed validation");
          return sendAnswer(reply, errorAnswer("stored_document_invalid"));
      }
    },
  );
}
