/**
 * Piscina task module for `POST /verify`. Thin on purpose: it unwraps the task and hands the
 * bytes to the request handling in src/service, which calls the verifier library.
 */
import {
  answerVerifyRequest,
  type VerifyAnswer,
  type VerifyTask,
} from "../src/service/verify-request.js";
import { context, identity } from "./context.js";

const requestContext = { maxBatch: context.maxBatch, signer: () => identity.signer() };

export default function verify(task: VerifyTask): VerifyAnswer {
  return answerVerifyRequest(new Uint8Array(task.body), task, requestContext);
}
