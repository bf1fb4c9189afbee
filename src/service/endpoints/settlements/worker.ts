/** Worker-thread side of `POST /payment-receipts`: the body's strict parse and checks. */
import { implementTask } from "../../tasks/worker.js";
import { preparePaymentReceipt } from "./answer.js";
import { paymentReceiptTask } from "./contract.js";

export default implementTask(paymentReceiptTask, (task) =>
  preparePaymentReceipt(new Uint8Array(task.body)),
);
