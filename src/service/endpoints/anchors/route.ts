/**
 * Anchor hosting (service.md §2): `POST /anchors` checks the proof on a worker, then the
 * anchors queue stores it; `GET /anchors/{digest}` serves the stored bytes as they are.
 */
import type { FastifyInstance } from "fastify";
import { anchorDocumentBytes, anchorId } from "../../../../queues/anchors.js";
import { capBucketOf } from "../../../access/principal.js";
import { addUsage, chargeUsage } from "../../../storage/usage.js";
import { errorAnswer, ServiceError, sendAnswer } from "../../errors.js";
import { fairShareKey } from "../../fair-share.js";
import { clientGone } from "../../http/client-gone.js";
import { submitDurably } from "../../http/durable-write.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { fromStore, STORE_UNAVAILABLE } from "../../library-errors.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { route } from "../operation.js";
import { getAnchorOperation, prepareAnchorTask, storeAnchorOperation } from "./contract.js";

export interface AnchorRoutesOptions {
  /** How long `POST /anchors` waits for a durable write before answering 202. */
  storeWaitMs?: number;
}

const DEFAULT_STORE_WAIT_MS = 10_000;

const DIGEST_DETAIL = "digest must be sha256: and 64 hex digits";

/**
 * Anchor usage lives in `anchors` beside the proofs (src/storage/usage.ts), under ids that
 * `GET /anchors/{digest}` can never name.
 */
const USAGE_COLLECTION = "anchors";
const WRITE_FAILED = "the anchor store could not complete the write; nothing is half-stored, retry";
const READ_FAILED = "the anchor store cannot be read right now, retry";

export async function anchorRoutes(app: FastifyInstance, options: AnchorRoutesOptions = {}) {
  const storeWaitMs = options.storeWaitMs ?? DEFAULT_STORE_WAIT_MS;
  const { anchorPrincipalQuotaBytes, anchorEvaluationQuotaBytes } = app.serviceConfig.limits;

  route(app, storeAnchorOperation, {
    config: { idempotent: true },
    handler: async (request, reply) => {
      const body = transferableBody(request.body);
      const prepared = await app.cpuPool.run(prepareAnchorTask, { body }, [body], {
        clientGone: clientGone(reply),
        principal: fairShareKey(request),
      });
      if (!("kind" in prepared)) return sendAnswer(reply, prepared);
      const { digest } = prepared.job;
      // Anchors have no owner, and a job is shared by everyone posting the same proof, so
      // each submission is charged to its principal before it is queued: the bytes of the
      // document it stores, not of the proof alone (issue 34, finding 2).
      const storedBytes = anchorDocumentBytes(prepared.job);
      const evaluation = capBucketOf(request.principal) === "evaluation";
      const quotaBytes = evaluation ? anchorEvaluationQuotaBytes : anchorPrincipalQuotaBytes;
      const setting = evaluation ? "ANCHOR_EVALUATION_KEY_QUOTA_BYTES" : "ANCHOR_KEY_QUOTA_BYTES";
      const usage = [app.documentStore, USAGE_COLLECTION, "principal", request.principal] as const;
      const held = await fromStore(reply, "anchors", WRITE_FAILED, () =>
        chargeUsage(...usage, storedBytes, quotaBytes),
      );
      if (held !== null) {
        const detail = `this principal's anchors take ${held} stored bytes; this one would take ${storedBytes} and the quota is ${quotaBytes} (${setting})`;
        const refusal = { detail, limit: quotaBytes, held };
        return sendAnswer(reply, errorAnswer("anchor_quota_exceeded", refusal));
      }
      const stored = await submitDurably(request, reply, app.anchorsQueue, {
        jobId: prepared.jobId,
        job: prepared.job,
        waitMs: storeWaitMs,
        principal: request.principal,
        statusUrl: `/anchors/${digest}`,
        pending: { digest },
        unavailable: {
          error: STORE_UNAVAILABLE.anchors,
          detail: WRITE_FAILED,
          log: "anchor store job failed",
        },
        // A 503 is retried: its charge is given back first, so the retry is the one that pays.
        undo: () =>
          addUsage(...usage, -storedBytes).catch((error: unknown) => {
            request.log.warn({ err: error }, "anchor quota charge not given back");
          }),
      });
      if (stored === null) return reply;
      const { outcome, status, bytes } = stored;
      return reply.code(200).send({ stored: true, digest, status, bytes, outcome });
    },
  });

  route<{ Params: { digest: string } }>(app, getAnchorOperation, {
    attachValidation: true,
    handler: async (request, reply) => {
      const id = request.validationError ? null : anchorId(request.params.digest);
      if (id === null) throw new ServiceError("invalid_digest", { detail: DIGEST_DETAIL });
      const stored = await fromStore(reply, "anchors", READ_FAILED, () =>
        app.documentStore.get("anchors", id),
      );
      if (stored === null) throw new ServiceError("anchor_not_found");
      return sendStoredDocument(request, reply, stored);
    },
  });
}
