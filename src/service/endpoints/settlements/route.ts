/**
 * `POST /payment-receipts` (service.md §4): internal settlement ingestion. Loopback callers
 * with the internal token submit a settlement; a worker parses and checks the body, the
 * settlements queue signs and stores the receipt, and the answer comes once it is durable.
 */

import type { FastifyInstance } from "fastify";
import { answer, sendAnswer } from "../../errors.js";
import { fairShareKey } from "../../fair-share.js";
import { clientGone } from "../../http/client-gone.js";
import { submitDurably } from "../../http/durable-write.js";
import { STORE_UNAVAILABLE } from "../../library-errors.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { route } from "../operation.js";
import type { PaymentReceiptTask } from "./answer.js";
import { paymentReceiptTask, recordPaymentReceiptOperation } from "./contract.js";
import { registerInternalAccess } from "./internal-access.js";

export interface PaymentReceiptRoutesOptions {
  /** How long `POST /payment-receipts` waits for a durable write before answering 202. */
  storeWaitMs?: number;
}

const DEFAULT_STORE_WAIT_MS = 10_000;
const WRITE_FAILED = "the receipt could not be stored; nothing is half-stored, retry";

export async function paymentReceiptRoutes(
  app: FastifyInstance,
  options: PaymentReceiptRoutesOptions = {},
) {
  const storeWaitMs = options.storeWaitMs ?? DEFAULT_STORE_WAIT_MS;
  registerInternalAccess(app, app.internalToken);

  route(app, recordPaymentReceiptOperation, {
    handler: async (request, reply) => {
      const body = transferableBody(request.body);
      const task: PaymentReceiptTask = { body };
      const prepared = await app.cpuPool.run(paymentReceiptTask, task, [body], {
        clientGone: clientGone(reply),
        principal: fairShareKey(request),
      });
      if (prepared.kind === "reply") return sendAnswer(reply, prepared);
      const { tx } = prepared.job;
      const stored = await submitDurably(request, reply, app.settlementsQueue, {
        jobId: prepared.jobId,
        job: prepared.job,
        waitMs: storeWaitMs,
        principal: request.principal,
        statusUrl: `/receipts/${tx}`,
        pending: { tx },
        unavailable: {
          error: STORE_UNAVAILABLE.settlements,
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
  });
}
