/**
 * Piscina task module for `POST /verify`. Thin on purpose: it unwraps the task and hands the
 * bytes to the request handling in src/service, which calls the verifier library.
 */
import { workerData } from "node:worker_threads";
import {
  answerVerifyRequest,
  type VerifyAnswer,
  type VerifyTask,
  type VerifyWorkerContext,
} from "../src/service/verify-request.js";

const context = workerData as VerifyWorkerContext;

export default function verify(task: VerifyTask): VerifyAnswer {
  return answerVerifyRequest(new Uint8Array(task.body), task, context);
}
