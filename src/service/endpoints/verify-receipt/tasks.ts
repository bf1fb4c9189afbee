/** The worker task of `POST /verify-receipt`: the route and `worker.ts` share this definition. */
import type { Answer } from "../../errors.js";
import { defineTask } from "../../tasks/define-task.js";
import type { VerifyReceiptTask } from "./answer.js";

export const verifyReceiptTask = defineTask<VerifyReceiptTask, Answer>("verify-receipt");
