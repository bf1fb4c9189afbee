/**
 * Worker-thread side of `POST /verify`. Thin on purpose: it hands the bytes to the shared
 * bundle verification (`verification/answer.ts`), which calls the verifier library.
 */
import { implementTask, workerContext, workerIdentity } from "../../tasks/worker.js";
import { answerVerifyRequest } from "../../verification/answer.js";
import type { VerifyOutcome } from "../../verification/outcome.js";
import { verifyTask } from "./contract.js";

const requestContext = {
  maxBatch: workerContext().maxBatch,
  maxResultBytes: workerContext().maxResultBytes,
  signer: () => workerIdentity().signer(),
};

/**
 * The answer's text, written once as UTF-8 into an ArrayBuffer of its own, which moves to the
 * main thread with the answer: the main thread sends those bytes as they are. As text, the
 * answer was copied into the message, copied out of it, and encoded on the main thread, which
 * serves every connection; a 50-bundle batch's answer is about 30 KB.
 */
const encoder = new TextEncoder();

export default implementTask(
  verifyTask,
  (task): VerifyOutcome => {
    const outcome = answerVerifyRequest(new Uint8Array(task.body), task, requestContext);
    if (!("json" in outcome) || typeof outcome.json !== "string") return outcome;
    return { ...outcome, json: encoder.encode(outcome.json) };
  },
  (outcome) =>
    "json" in outcome && outcome.json instanceof Uint8Array
      ? [outcome.json.buffer as ArrayBuffer]
      : [],
);
