/**
 * Piscina task module for `POST /payment-receipts`. Thin on purpose: the request handling
 * lives in src/service/payment-receipt-request.ts.
 */
import type { SettlementJobRequest } from "../queues/settlements.js";
import {
  type PaymentReceiptRefusal,
  type PaymentReceiptTask,
  preparePaymentReceipt,
} from "../src/service/payment-receipt-request.js";
import { releasingHeap } from "../src/service/worker-heap.js";

export default releasingHeap(function paymentReceipt(
  task: PaymentReceiptTask,
): PaymentReceiptRefusal | SettlementJobRequest {
  return preparePaymentReceipt(new Uint8Array(task.body));
});
