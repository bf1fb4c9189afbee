/**
 * Context notarization (issue 28; docs/notarization.md): `POST /notarize` signs on a worker
 * and stores the document here, `GET /notarize/{digest}` serves stored bytes as they are,
 * `GET /notarize` describes the service from the library's constants.
 */
import type { FastifyInstance } from "fastify";
import { digestHex, NOTARIZATIONS, normalizeDigest } from "../../../notarization/index.js";
import { storeOwnedNotarization } from "../../../notarization/ownership.js";
import { errorAnswer, ServiceError, sendAnswer } from "../../errors.js";
import { fairShareKey } from "../../fair-share.js";
import { clientGone } from "../../http/client-gone.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { fromStore } from "../../library-errors.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { SERVICE_NAME } from "../../service-name.js";
import { route } from "../operation.js";
import {
  describeNotarizationOperation,
  getNotarizationOperation,
  NOTARIZE_BODY_LIMIT_BYTES,
  notarizationInfo,
  notarizationQuotas,
  notarizeOperation,
  notarizeTask,
} from "./contract.js";

const WRITE_FAILED =
  "the notarization store could not complete the write; nothing was stored, retry";
const READ_FAILED = "the notarization store cannot be read right now, retry";
const DIGEST_DETAIL = "the digest must be 64 hex digits, with or without sha256:";

export async function notarizeRoutes(app: FastifyInstance) {
  const quotas = notarizationQuotas(app.serviceConfig.limits);
  route(app, notarizeOperation, {
    bodyLimit: NOTARIZE_BODY_LIMIT_BYTES,
    config: { idempotent: true },
    handler: async (request, reply) => {
      const body = transferableBody(request.body);
      const prepared = await app.cpuPool.run(
        notarizeTask,
        { body, service: SERVICE_NAME, now: app.clock() },
        [body],
        { clientGone: clientGone(reply), principal: fairShareKey(request) },
      );
      if (!("kind" in prepared)) return sendAnswer(reply, prepared);
      // Idempotent by content: the id is the digest of the signed bytes, so a retried write
      // of this statement stores nothing and is charged nothing.
      const stored = await fromStore(reply, "documents", WRITE_FAILED, () =>
        storeOwnedNotarization(
          app.documentStore,
          prepared.digest,
          prepared.document,
          request.principal,
          quotas,
          new Date(app.clock()),
        ),
      );
      if ("quotaExceeded" in stored) {
        const { quotaExceeded, quotaBytes, heldBytes } = stored;
        const owner =
          quotaExceeded === "tenant" ? "all evaluation keys together hold" : "this principal holds";
        const detail = `${owner} ${heldBytes} bytes of notarizations; this one is ${prepared.document.byteLength} and the quota is ${quotaBytes}; bytes come back as statements expire`;
        return sendAnswer(
          reply,
          errorAnswer("notarization_quota_exceeded", {
            detail,
            limit: quotaBytes,
            held: heldBytes,
          }),
        );
      }
      return sendAnswer(reply, { statusCode: 200, json: prepared.answer });
    },
  });

  route<{ Params: { digest: string } }>(app, getNotarizationOperation, {
    handler: async (request, reply) => {
      const id = normalizeDigest(request.params.digest);
      if (id === null) throw new ServiceError("invalid_digest", { detail: DIGEST_DETAIL });
      const stored = await fromStore(reply, "documents", READ_FAILED, () =>
        app.documentStore.get(NOTARIZATIONS, id),
      );
      if (stored === null) {
        throw new ServiceError("notarization_not_found", {
          detail: `no notarization is stored as ${digestHex(id)}`,
        });
      }
      return sendStoredDocument(request, reply, stored);
    },
  });

  route(app, describeNotarizationOperation, {
    handler: async () =>
      notarizationInfo(app.serviceIdentity.signer().did, app.serviceConfig.limits),
  });
}
