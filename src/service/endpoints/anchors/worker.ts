/** Worker-thread side of `POST /verify-anchor` and `POST /anchors`: parsing and proof checks. */
import { implementTask } from "../../tasks/worker.js";
import { answerVerifyAnchorRequest } from "../../verification/anchor-answer.js";
import { prepareAnchorPost } from "./answer.js";
import { prepareAnchorTask, verifyAnchorTask } from "./contract.js";

export const verify = implementTask(verifyAnchorTask, (task) =>
  answerVerifyAnchorRequest(new Uint8Array(task.body)),
);

export const store = implementTask(prepareAnchorTask, (task) =>
  prepareAnchorPost(new Uint8Array(task.body)),
);
