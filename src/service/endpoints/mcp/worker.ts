/** Worker-thread side of `POST /mcp`: JSON-RPC parsing and the tools' work. */
import { implementTask, workerContext, workerIdentity } from "../../tasks/worker.js";
import { answerMcpRequest } from "./answer.js";
import { mcpTask } from "./contract.js";

const requestContext = {
  maxBatch: workerContext().maxBatch,
  maxResultBytes: workerContext().maxResultBytes,
  signer: () => workerIdentity().signer(),
};

export default implementTask(mcpTask, (task) =>
  answerMcpRequest(new Uint8Array(task.body), task, requestContext),
);
