/**
 * Anchor hosting (service.md §2): `POST /anchors` checks the proof on a worker, then the
 * anchors queue stores it; `GET /anchors/{digest}` serves the stored bytes as they are.
 */
import type { FastifyInstance } from "fastify";
import { ANCHOR_DIGEST_PATTERN, anchorId } from "../../../../queues/anchors.js";
import { DocumentStoreUnavailableError } from "../../../storage/document-store.js";
import { addUsage, chargeUsage } from "../../../storage/usage.js";
import { errorAnswer, ServiceError, sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { submitDurably } from "../../http/durable-write.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { attestationSchema, postAnchorBodySchema } from "./answer.js";
import { prepareAnchorTask } from "./tasks.js";

export interface AnchorRoutesOptions {
  /** How long `POST /anchors` waits for a durable write before answering 202. */
  storeWaitMs?: number;
}

const DEFAULT_STORE_WAIT_MS = 10_000;

const DIGEST_DETAIL = "digest must be sha256: and 64 hex digits";

const STORE_UNAVAILABLE = "anchor_store_unavailable";
/**
 * Anchor usage lives in `anchors` beside the proofs (src/storage/usage.ts), under ids that
 * `GET /anchors/{digest}` can never name.
 */
const USAGE_COLLECTION = "anchors";
const WRITE_FAILED = "the anchor store could not complete the write; nothing is half-stored, retry";
const READ_FAILED = "the anchor store cannot be read right now, retry";

const digestMember = { type: "string", description: "`sha256:<64 lower-case hex>`" } as const;

const postAnchorSchema = {
  description:
    "Hosts an OpenTimestamps proof for a digest; a proof with more attestations replaces it",
  body: postAnchorBodySchema,
  response: {
    200: {
      description:
        "the write is durable; `outcome`: created, replaced (upgraded proof), unchanged (same " +
        "proof) or kept (the stored proof has as many attestations or more); `status` and " +
        "`bytes` describe the proof stored now",
      type: "object",
      required: ["stored", "digest", "status", "bytes", "outcome"],
      properties: {
        stored: { type: "boolean", const: true },
        digest: digestMember,
        status: { type: "string" },
        bytes: { type: "integer", description: "size of the stored proof" },
        outcome: { type: "string", enum: ["created", "replaced", "unchanged", "kept"] },
      },
    },
    202: {
      description: "accepted but not yet durable; poll `status_url`",
      type: "object",
      required: ["stored", "digest", "status_url"],
      properties: {
        stored: { type: "boolean", const: false },
        digest: digestMember,
        status_url: { type: "string" },
      },
    },
    400: {
      ...errorResponseSchema,
      description:
        "invalid_json, bad_request, invalid_digest, invalid_proof_encoding, or proof_rejected " +
        "with the anchor `code` (verifier.md §8.4)",
      properties: { ...errorResponseSchema.properties, code: { type: "string" } },
    },
    403: {
      ...errorResponseSchema,
      description:
        "anchor_quota_exceeded: this principal's proof bytes (`limit`, ANCHOR_KEY_QUOTA_BYTES, " +
        "GET /info) are used up; `held` is what it has submitted",
      properties: {
        ...errorResponseSchema.properties,
        limit: { type: "integer" },
        held: { type: "integer" },
      },
    },
    ...commonErrorResponses,
  },
} as const;

const getAnchorSchema = {
  description: "The stored anchor document for a digest",
  params: {
    type: "object",
    required: ["digest"],
    properties: {
      digest: {
        type: "string",
        pattern: ANCHOR_DIGEST_PATTERN,
        description: "`sha256:<64 hex>` (`:` may be percent-encoded; hex of either case)",
      },
    },
  },
  response: {
    200: {
      description: "the stored document, byte for byte as stored (strong ETag)",
      type: "object",
      required: ["digest", "proof", "note", "status", "stored_at", "attestations"],
      properties: {
        digest: digestMember,
        proof: { type: "string", description: "standard base64 of the .ots proof" },
        note: { type: ["string", "null"] },
        status: { type: "string" },
        stored_at: { type: "string", format: "date-time" },
        attestations: { type: "array", items: attestationSchema },
      },
    },
    304: { description: "the client's copy (If-None-Match) is current", type: "null" },
    400: { ...errorResponseSchema, description: "invalid_digest" },
    404: { ...errorResponseSchema, description: "anchor_not_found" },
    ...commonErrorResponses,
  },
} as const;

export async function anchorRoutes(app: FastifyInstance, options: AnchorRoutesOptions) {
  const storeWaitMs = options.storeWaitMs ?? DEFAULT_STORE_WAIT_MS;
  const quotaBytes = app.serviceConfig.limits.anchorPrincipalQuotaBytes;

  app.post(
    "/anchors",
    { schema: postAnchorSchema, config: { access: "keyed", idempotent: true } },
    async (request, reply) => {
      const body = transferableBody(request.body);
      const prepared = await app.cpuPool.run(prepareAnchorTask, { body }, [body], {
        clientGone: clientGone(reply),
      });
      if (!("kind" in prepared)) return sendAnswer(reply, prepared);
      const { digest, proof } = prepared.job;
      // Anchors have no owner, and a job is shared by everyone posting the same proof, so
      // each submission is charged to its principal before it is queued.
      const proofBytes = Buffer.byteLength(proof, "base64");
      const usage = [app.documentStore, USAGE_COLLECTION, "principal", request.principal] as const;
      let held: number | null;
      try {
        held = await chargeUsage(...usage, proofBytes, quotaBytes);
      } catch (error) {
        if (!(error instanceof DocumentStoreUnavailableError)) throw error;
        reply.header("retry-after", "1");
        throw new ServiceError(STORE_UNAVAILABLE, { detail: WRITE_FAILED });
      }
      if (held !== null) {
        const detail = `this principal has submitted ${held} bytes of anchor proofs; this one is ${proofBytes} and the quota is ${quotaBytes} (ANCHOR_KEY_QUOTA_BYTES)`;
        const refusal = { detail, limit: quotaBytes, held };
        return sendAnswer(reply, errorAnswer("anchor_quota_exceeded", refusal));
      }
      const stored = await submitDurably(request, reply, app.anchorsQueue, {
        jobId: prepared.jobId,
        job: prepared.job,
        waitMs: storeWaitMs,
        statusUrl: `/anchors/${digest}`,
        pending: { digest },
        unavailable: {
          error: STORE_UNAVAILABLE,
          detail: WRITE_FAILED,
          log: "anchor store job failed",
        },
        // A 503 is retried: its charge is given back first, so the retry is the one that pays.
        undo: () =>
          addUsage(...usage, -proofBytes).catch((error: unknown) => {
            request.log.warn({ err: error }, "anchor quota charge not given back");
          }),
      });
      if (stored === null) return reply;
      const { outcome, status, bytes } = stored;
      return reply.code(200).send({ stored: true, digest, status, bytes, outcome });
    },
  );

  app.get<{ Params: { digest: string } }>(
    "/anchors/:digest",
    { schema: getAnchorSchema, attachValidation: true, config: { access: "keyless" } },
    async (request, reply) => {
      const id = request.validationError ? null : anchorId(request.params.digest);
      if (id === null) throw new ServiceError("invalid_digest", { detail: DIGEST_DETAIL });
      let stored: Uint8Array | null;
      try {
        stored = await app.documentStore.get("anchors", id);
      } catch (error) {
        if (!(error instanceof DocumentStoreUnavailableError)) throw error;
        reply.header("retry-after", "1");
        throw new ServiceError(STORE_UNAVAILABLE, { detail: READ_FAILED });
      }
      if (stored === null) throw new ServiceError("anchor_not_found");
      return sendStoredDocument(request, reply, stored);
    },
  );
}
