/** Worker-thread side of `POST /verify-receipt`. */
import { implementTask } from "../../tasks/worker.js";
import { answerVerifyReceiptRequest } from "./answer.js";
import { verifyReceiptTask } from "./contract.js";

export default implementTask(verifyReceiptTask, (task) =>
  answerVerifyReceiptRequest(new Uint8Array(task.body)),
);
