/**
 * Piscina task module for `POST /verify`. Thin on purpose: it unwraps the task and hands the
 * bytes to the request handling in src/service, which calls the verifier library.
 */
import {
  answerVerifyRequest,
  type VerifyAnswer,
  type VerifyTask,
} from "../src/service/verify-request.js";
import { releasingHeap } from "../src/service/worker-heap.js";
import { context, identity } from "./context.js";

const requestContext = {
  maxBatch: context.maxBatch,
  maxResultBytes: context.maxResultBytes,
  signer: () => identity.signer(),
};

export default releasingHeap(function verify(task: VerifyTask): VerifyAnswer {
  return answerVerifyRequest(new Uint8Array(task.body), task, requestContext);
});
