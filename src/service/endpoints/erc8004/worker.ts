/** Worker-thread side of `POST /erc8004/validate`: verification, checks and the attestation. */
import { openValidatorKey, type ValidatorKey } from "../../../erc8004/validator-key.js";
import { implementTask, workerContext } from "../../tasks/worker.js";
import { answerValidateRequest } from "./answer.js";
import { validateTask } from "./contract.js";

let validator: ValidatorKey | undefined;

const requestContext = {
  validator: () => {
    validator ??= openValidatorKey(workerContext().dataDir);
    return validator;
  },
  now: Date.now,
  maxResultBytes: workerContext().maxResultBytes,
};

export default implementTask(validateTask, (task) =>
  answerValidateRequest(new Uint8Array(task.body), requestContext, task.authorisedUnits),
);
