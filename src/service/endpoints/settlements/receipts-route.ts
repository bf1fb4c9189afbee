/**
 * `GET /receipts/{tx}` (service.md §4): the stored settlement receipt of a transaction, served
 * as the bytes that were stored, so its ETag never changes.
 */
import type { FastifyInstance } from "fastify";
import {
  INVALID_TRANSACTION_HASH_DETAIL,
  transactionId,
} from "../../../payments/settlement-receipt.js";
import { errorAnswer, sendAnswer } from "../../errors.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { fromStore } from "../../library-errors.js";
import { route } from "../operation.js";
import { getPaymentReceiptOperation } from "./contract.js";

const READ_FAILED = "the settlement store cannot be read right now, retry";

export async function receiptRoutes(app: FastifyInstance) {
  route<{ Params: { tx: string } }>(app, getPaymentReceiptOperation, {
    attachValidation: true,
    handler: async (request, reply) => {
      const id = request.validationError ? null : transactionId(request.params.tx);
      if (id === null) {
        const detail = INVALID_TRANSACTION_HASH_DETAIL;
        return sendAnswer(reply, errorAnswer("invalid_transaction_hash", { detail }));
      }
      const stored = await fromStore(reply, "settlements", READ_FAILED, () =>
        app.documentStore.get("settlements", id),
      );
      if (stored === null) return sendAnswer(reply, errorAnswer("receipt_not_found"));
      return sendStoredDocument(request, reply, stored);
    },
  });
}
