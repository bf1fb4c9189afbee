/**
 * `GET /receipts/{tx}` (service.md §4): the stored settlement receipt of a transaction, served
 * as the bytes that were stored, so its ETag never changes.
 */
import type { FastifyInstance } from "fastify";
import {
  INVALID_TRANSACTION_HASH_DETAIL,
  transactionId,
} from "../../../payments/settlement-receipt.js";
import { DocumentStoreUnavailableError } from "../../../storage/document-store.js";
import { type ErrorCode, errorAnswer, sendAnswer } from "../../errors.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { route } from "../operation.js";
import { getPaymentReceiptOperation } from "./contract.js";

export const SETTLEMENT_STORE_UNAVAILABLE = "settlement_store_unavailable" satisfies ErrorCode;

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
      let stored: Uint8Array | null;
      try {
        stored = await app.documentStore.get("settlements", id);
      } catch (error) {
        if (!(error instanceof DocumentStoreUnavailableError)) throw error;
        return sendAnswer(
          reply.header("retry-after", "1"),
          errorAnswer(SETTLEMENT_STORE_UNAVAILABLE, { detail: READ_FAILED }),
        );
      }
      if (stored === null) return sendAnswer(reply, errorAnswer("receipt_not_found"));
      return sendStoredDocument(request, reply, stored);
    },
  });
}
