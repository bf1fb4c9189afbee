/** The worker task of `POST /payment-receipts`: the route and `worker.ts` share this definition. */
import type { SettlementJobRequest } from "../../../../queues/settlements.js";
import { defineTask } from "../../tasks/define-task.js";
import type { PaymentReceiptRefusal, PaymentReceiptTask } from "./answer.js";

export const paymentReceiptTask = defineTask<
  PaymentReceiptTask,
  PaymentReceiptRefusal | SettlementJobRequest
>(import.meta.url);
