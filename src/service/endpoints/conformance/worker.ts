/** Worker-thread side of `POST /conformance`: grading and the signed report. */
import { corpusLoader } from "../../../conformance/corpus.js";
import { implementTask, workerContext, workerIdentity } from "../../tasks/worker.js";
import { answerConformanceRequest } from "./answer.js";
import { conformanceTask } from "./contract.js";

const requestContext = {
  corpus: corpusLoader(workerContext().corpusDir),
  signer: () => workerIdentity().signer(),
};

export default implementTask(conformanceTask, (task) =>
  answerConformanceRequest(new Uint8Array(task.body), requestContext),
);
