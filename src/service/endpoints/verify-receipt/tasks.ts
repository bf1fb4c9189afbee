/** The worker task of `POST /verify-receipt`: the route and `worker.ts` share this definition. */
import { defineTask } from "../../tasks/define-task.js";
import type { VerifyReceiptAnswer, VerifyReceiptTask } from "./answer.js";

export const verifyReceiptTask = defineTask<VerifyReceiptTask, VerifyReceiptAnswer>(
  "verify-receipt",
);
