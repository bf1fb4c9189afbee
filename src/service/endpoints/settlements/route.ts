/**
 * `POST /payment-receipts` (service.md §4): internal settlement ingestion. Loopback callers
 * with the internal token submit a settlement; a worker parses and checks the body, the
 * settlements queue signs and stores the receipt, and the answer comes once it is durable.
 */

import type { FastifyInstance } from "fastify";
import { answer, sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { submitDurably } from "../../http/durable-write.js";
import type { InternalToken } from "../../internal-token.js";
import { INTERNAL_TOKEN_HEADER, registerInternalAccess } from "../../plugins/internal-access.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { type PaymentReceiptTask, paymentReceiptBodySchema } from "./answer.js";
import {
  receiptDigestSchema,
  SETTLEMENT_STORE_UNAVAILABLE,
  settlementReceiptSchema,
} from "./receipts-route.js";
import { paymentReceiptTask } from "./contract.js";

export interface PaymentReceiptRoutesOptions {
  internalToken: InternalToken;
  /** How long `POST /payment-receipts` waits for a durable write before answering 202. */
  storeWaitMs?: number;
}

const DEFAULT_STORE_WAIT_MS = 10_000;
const WRITE_FAILED = "the receipt could not be stored; nothing is half-stored, retry";

const txMember = { type: "string", description: "`0x` + 64 lower-case hex" } as const;

const postPaymentReceiptSchema = {
  description:
    "Internal: signs and stores the settlement receipt of a settled payment, once per " +
    "transaction. Loopback callers only, with `X-Internal-Token`",
  headers: {
    type: "object",
    properties: {
      [INTERNAL_TOKEN_HEADER]: {
        type: "string",
        description: "the token in `INTERNAL_TOKEN_FILE` (default `DATA_DIR/internal.token`)",
      },
    },
  },
  body: paymentReceiptBodySchema,
  response: {
    200: {
      description:
        "the receipt is durable; `idempotent` (present only when true): the transaction " +
        "already had this receipt, and no other was signed",
      type: "object",
      required: ["stored", "tx", "digest", "receipt"],
      properties: {
        stored: { type: "boolean", const: true },
        tx: txMember,
        digest: receiptDigestSchema,
        idempotent: { type: "boolean", const: true },
        receipt: settlementReceiptSchema,
      },
    },
    202: {
      description: "accepted but not yet durable; poll `status_url`",
      type: "object",
      required: ["stored", "tx", "status_url"],
      properties: {
        stored: { type: "boolean", const: false },
        tx: txMember,
        status_url: { type: "string" },
      },
    },
    400: {
      ...errorResponseSchema,
      description: "invalid_json, invalid_transaction_hash, or bad_request with a `detail`",
    },
    401: { ...errorResponseSchema, description: "internal_token_required: missing or wrong" },
    403: { ...errorResponseSchema, description: "loopback_only: the caller is not on loopback" },
    ...commonErrorResponses,
  },
} as const;

export async function paymentReceiptRoutes(
  app: FastifyInstance,
  options: PaymentReceiptRoutesOptions,
) {
  const storeWaitMs = options.storeWaitMs ?? DEFAULT_STORE_WAIT_MS;
  registerInternalAccess(app, options.internalToken);

  app.post(
    "/payment-receipts",
    { schema: postPaymentReceiptSchema, config: { access: "internal" } },
    async (request, reply) => {
      const body = transferableBody(request.body);
      const task: PaymentReceiptTask = { body };
      const prepared = await app.cpuPool.run(paymentReceiptTask, task, [body], {
        clientGone: clientGone(reply),
      });
      if (prepared.kind === "reply") return sendAnswer(reply, prepared);
      const { tx } = prepared.job;
      const stored = await submitDurably(request, reply, app.settlementsQueue, {
        jobId: prepared.jobId,
        job: prepared.job,
        waitMs: storeWaitMs,
        statusUrl: `/receipts/${tx}`,
        pending: { tx },
        unavailable: {
          error: SETTLEMENT_STORE_UNAVAILABLE,
          detail: WRITE_FAILED,
          log: "settlement receipt job failed",
        },
      });
      if (stored === null) return reply;
      const { digest, idempotent, receipt } = stored;
      // Serialised here, not by the response schema, which would reorder the receipt's members.
      const result = { stored: true, tx, digest, ...(idempotent ? { idempotent } : {}), receipt };
      return sendAnswer(reply, answer(200, result));
    },
  );
}
