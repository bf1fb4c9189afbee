/**
 * Piscina task module for `POST /mcp`. Thin on purpose: it unwraps the task and hands the
 * bytes to the MCP request handling in src/service/mcp, which calls the verifier library.
 */
import { answerMcpRequest, type McpAnswer, type McpTask } from "../src/service/mcp/answer.js";
import { releasingHeap } from "../src/service/worker-heap.js";
import { context, identity } from "./context.js";

const requestContext = {
  maxBatch: context.maxBatch,
  maxResultBytes: context.maxResultBytes,
  signer: () => identity.signer(),
};

export default releasingHeap(function mcp(task: McpTask): McpAnswer {
  return answerMcpRequest(new Uint8Array(task.body), task, requestContext);
});
