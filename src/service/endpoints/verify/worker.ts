/**
 * Worker-thread side of `POST /verify`. Thin on purpose: it hands the bytes to the shared
 * bundle verification (`verification/answer.ts`), which calls the verifier library.
 */
import { implementTask, workerContext, workerIdentity } from "../../tasks/worker.js";
import { answerVerifyRequest } from "../../verification/answer.js";
import { verifyTask } from "./contract.js";

const requestContext = {
  maxBatch: workerContext().maxBatch,
  maxResultBytes: workerContext().maxResultBytes,
  signer: () => workerIdentity().signer(),
};

export default implementTask(verifyTask, (task) =>
  answerVerifyRequest(new Uint8Array(task.body), task, requestContext),
);
