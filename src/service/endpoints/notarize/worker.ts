/** Worker-thread side of `POST /notarize`: parse, check and sign with this thread's key view. */
import { implementTask, workerIdentity } from "../../tasks/worker.js";
import { prepareNotarization } from "./answer.js";
import { notarizeTask } from "./contract.js";

export default implementTask(notarizeTask, (task) =>
  prepareNotarization(
    new Uint8Array(task.body),
    task.service,
    workerIdentity().signer(),
    new Date(task.now),
  ),
);
