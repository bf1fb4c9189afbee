/**
 * `POST /payment-receipts` from raw body bytes (service.md §4), on a worker thread
 * (`worker.ts`): strict parsing and the settlement schema, then either the
 * refusal to send or the job for the settlements queue. Signing happens in the queue's
 * processor, so receipts submitted over HTTP and by other producers are made by one code path.
 */
import { type SettlementJobRequest, settlementJobId } from "../../../../queues/settlements.js";
import {
  checkSettlement,
  INVALID_TRANSACTION_HASH_DETAIL,
  transactionId,
} from "../../../payments/settlement-receipt.js";
import { isObject, type JsonValue } from "../../../verifier/json/value.js";
import { type Answer, errorAnswer, errorAnswerOf, parseRequestJson } from "../../errors.js";

export interface PaymentReceiptTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
}

/** A refusal to send as it is. */
export type PaymentReceiptRefusal = { kind: "reply" } & Answer;

function refuse(answer: Answer): PaymentReceiptRefusal {
  return { kind: "reply", ...answer };
}

export function preparePaymentReceipt(
  bytes: Uint8Array,
): PaymentReceiptRefusal | SettlementJobRequest {
  let body: JsonValue;
  try {
    body = parseRequestJson(bytes);
  } catch (error) {
    return refuse(errorAnswerOf(error));
  }
  if (!isObject(body)) {
    const detail = "body must be an object {tx, network, asset, amount, payTo, path}";
    return refuse(errorAnswer("bad_request", { detail }));
  }
  // The one member with its own code, the same as `GET /receipts/{tx}` answers.
  const tx = body.get("tx");
  if (typeof tx === "string" && transactionId(tx) === null) {
    return refuse(
      errorAnswer("invalid_transaction_hash", { detail: INVALID_TRANSACTION_HASH_DETAIL }),
    );
  }
  const settlement = checkSettlement(body);
  if (typeof settlement === "string") {
    return refuse(errorAnswer("bad_request", { detail: settlement }));
  }
  return { kind: "submit", jobId: settlementJobId(settlement.tx), job: settlement };
}
