/**
 * `GET /revocations/{issuer}` (service.md §3): an issuer's revocation document, served as
 * stored, and only once it has been validated (on a worker, remembered per stored bytes).
 */
import type { FastifyInstance } from "fastify";
import { lookupRevocationDocument } from "../../../revocations/documents.js";
import { errorAnswer, sendAnswer } from "../../errors.js";
import { fairShareKey } from "../../fair-share.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { route } from "../operation.js";
import { getRevocationsOperation, revocationDocumentCheckOn } from "./contract.js";

export async function revocationRoutes(app: FastifyInstance) {
  route<{ Params: { issuer: string } }>(app, getRevocationsOperation, {
    handler: async (request, reply) => {
      const check = revocationDocumentCheckOn(app.cpuPool, { principal: fairShareKey(request) });
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
  });
}
