/** Worker-thread side of `GET /revocations/{issuer}`: the stored document's signatures. */

import { revocationDocumentProblems } from "../../../revocations/documents.js";
import { implementTask } from "../../tasks/worker.js";
import { checkRevocationDocumentTask } from "./contract.js";

export default implementTask(
  checkRevocationDocumentTask,
  (task) => revocationDocumentProblems(new Uint8Array(task.bytes), task.issuer).length === 0,
);
