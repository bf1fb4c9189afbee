/**
 * `POST /conformance` from raw body bytes to response text (service.md §10). It runs on a
 * worker thread (`worker.ts`): the submission is parsed strictly, then checked, graded
 * against the corpus the worker has loaded and signed with the current service key by the
 * referee's own code (src/conformance/referee.ts, which the CLI grades with too).
 */
import type { Corpus } from "../../../conformance/corpus.js";
import { refereeReport } from "../../../conformance/referee.js";
import type { Ed25519Signer } from "../../../verifier/crypto/ed25519.js";
import {
  type Answer,
  answer,
  answerOrRefusal,
  errorAnswer,
  parseRequestJson,
} from "../../errors.js";
import { refusalFor } from "../../library-errors.js";
import { SERVICE_NAME } from "../../service-name.js";

export interface ConformanceTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
}

export interface ConformanceRequestContext {
  /** The deployed corpus (loaded once per thread), or null when none is deployed. */
  corpus(): Promise<Corpus | null>;
  /** The current service key (it changes when the key is rotated). */
  signer(): Ed25519Signer;
}

export async function answerConformanceRequest(
  bytes: Uint8Array,
  context: ConformanceRequestContext,
): Promise<Answer> {
  // Without a corpus nothing can be graded, whatever the body says.
  const corpus = await context.corpus();
  if (corpus === null) return errorAnswer("corpus_not_deployed");

  return answerOrRefusal(() => {
    const submission = parseRequestJson(bytes);
    try {
      return answer(200, {
        report: refereeReport(corpus, submission, context.signer()),
        service: SERVICE_NAME,
      });
    } catch (error) {
      // A code the grader adds does not compile until LIBRARY_ERROR_CODES maps it.
      throw refusalFor(error, (failure) => ({ detail: failure.detail })) ?? error;
    }
  });
}
