/**
 * `POST /payment-receipts` from raw body bytes (service.md §4), on a worker thread
 * (workers/payment-receipt.ts): strict parsing and the settlement schema, then either the
 * refusal to send or the job for the settlements queue. Signing happens in the queue's
 * processor, so receipts submitted over HTTP and by other producers are made by one code path.
 */
import { type SettlementJobRequest, settlementJobId } from "../../../../queues/settlements.js";
import {
  checkSettlement,
  INVALID_TRANSACTION_HASH_DETAIL,
  settlementSchema,
  transactionId,
} from "../../../payments/settlement-receipt.js";
import { dumpCompact } from "../../../verifier/json/dump.js";
import { parseJson, StrictJsonError } from "../../../verifier/json/parse.js";
import { isObject, type JsonValue } from "../../../verifier/json/value.js";

export interface PaymentReceiptTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
}

export interface PaymentReceiptRefusal {
  kind: "reply";
  statusCode: 400;
  /** The response body, already serialised. */
  json: string;
}

/** The body schema of `POST /payment-receipts`: a settlement, as the queue carries it. */
export const paymentReceiptBodySchema = settlementSchema;

function refuse(error: string, detail: string): PaymentReceiptRefusal {
  return { kind: "reply", statusCode: 400, json: dumpCompact({ error, detail }) };
}

export function preparePaymentReceipt(
  bytes: Uint8Array,
): PaymentReceiptRefusal | SettlementJobRequest {
  let body: JsonValue;
  try {
    body = parseJson(bytes);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    return refuse("invalid_json", error.message);
  }
  if (!isObject(body)) {
    return refuse(
      "bad_request",
      "body must be an object {tx, network, asset, amount, payTo, path}",
    );
  }
  // The one member with its own code, the same as `GET /receipts/{tx}` answers.
  const tx = body.get("tx");
  if (typeof tx === "string" && transactionId(tx) === null) {
    return refuse("invalid_transaction_hash", INVALID_TRANSACTION_HASH_DETAIL);
  }
  const settlement = checkSettlement(body);
  if (typeof settlement === "string") return refuse("bad_request", settlement);
  return { kind: "submit", jobId: settlementJobId(settlement.tx), job: settlement };
}
