/**
 * Context notarization (issue 28; docs/notarization.md): `POST /notarize` signs on a worker
 * and stores the document here, `GET /notarize/{digest}` serves stored bytes as they are,
 * `GET /notarize` describes the service from the library's constants.
 */
import type { FastifyInstance } from "fastify";
import {
  digestHex,
  MAX_ACTION_CHARS,
  MAX_AGENT_ID_CHARS,
  MAX_METADATA_ENTRIES,
  MAX_METADATA_KEY_CHARS,
  MAX_METADATA_VALUE_CHARS,
  MAX_MODEL_CHARS,
  NOTARIZATION_KIND,
  NOTARIZATION_NOTE,
  NOTARIZATION_SPEC,
  NOTARIZATION_VERSION,
  NOTARIZATIONS,
  normalizeDigest,
  REQUEST_FIELDS,
} from "../../../notarization/index.js";
import {
  type NotarizationQuotas,
  notarizationQuotaTerms,
  storeOwnedNotarization,
} from "../../../notarization/ownership.js";
import type { ServiceLimits } from "../../config.js";
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
  notarizeOperation,
  notarizeTask,
} from "./contract.js";

const WRITE_FAILED =
  "the notarization store could not complete the write; nothing was stored, retry";
const READ_FAILED = "the notarization store cannot be read right now, retry";
const DIGEST_DETAIL = "the digest must be 64 hex digits, with or without sha256:";

/** `GET /notarize`'s `request` member: each field's rule, from the library's limits. */
const REQUEST_RULES: Record<(typeof REQUEST_FIELDS)[number], string> = {
  context_digest: "sha256:<64 hex> or 64 hex, either case; stored as sha256:<lower-case hex>",
  prompt_hash: "sha256:<64 hex> or 64 hex, either case; stored as sha256:<lower-case hex>",
  action: `string, at most ${MAX_ACTION_CHARS} characters`,
  model: `string, at most ${MAX_MODEL_CHARS} characters`,
  agent_id: `string, at most ${MAX_AGENT_ID_CHARS} characters`,
  metadata:
    `object, at most ${MAX_METADATA_ENTRIES} entries; keys non-empty ASCII of at most ` +
    `${MAX_METADATA_KEY_CHARS} characters; values strings of at most ` +
    `${MAX_METADATA_VALUE_CHARS} characters, integers with |n| <= 2^53 - 1, booleans or null`,
};

/** What `GET /notarize` and `/info` say of the service (the issuer is read per request). */
export function notarizationInfo(issuer: string, limits: ServiceLimits) {
  return {
    spec: NOTARIZATION_SPEC,
    kind: NOTARIZATION_KIND,
    version: NOTARIZATION_VERSION,
    issuer,
    endpoints: {
      notarize: "POST /notarize",
      lookup: "GET /notarize/{digest}",
      describe: "GET /notarize",
    },
    request: {
      fields: REQUEST_FIELDS,
      required: "at least one of context_digest and prompt_hash",
      rules: REQUEST_RULES,
      unknown_fields: "400 unsupported_fields, with every unknown member in `fields`",
      max_body_bytes: NOTARIZE_BODY_LIMIT_BYTES,
    },
    statement: {
      members: ["kind", "version", "issued_at", "issuer", ...REQUEST_FIELDS, "sig"],
      signature:
        "Ed25519 over the JCS (RFC 8785) bytes of the statement without sig; " +
        "sig = {alg: ed25519, key: <issuer did:key>, value: <base64url>}",
      digest: "sha256 of the same JCS bytes, as sha256:<hex>",
      issued_at: "whole UTC seconds",
    },
    lookup_url: "/notarize/<hex of the digest>",
    store:
      "each statement's document under its digest; files (embedded) or PostgreSQL; kept " +
      "ttl_days (quotas) and then removed by receiptd notarization expire",
    note: NOTARIZATION_NOTE,
    verify_offline: "receiptd notarization verify <file>",
    quotas: notarizationQuotaTerms(notarizationQuotas(limits), limits.notarizationTtlDays),
  };
}

/** The quotas of `limits` (src/notarization/ownership.ts). */
export function notarizationQuotas(limits: ServiceLimits): NotarizationQuotas {
  return {
    principalBytes: limits.notarizationPrincipalQuotaBytes,
    evaluationKeyBytes: limits.notarizationEvaluationKeyQuotaBytes,
    evaluationBytes: limits.notarizationEvaluationQuotaBytes,
  };
}

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
