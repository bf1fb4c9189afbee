/**
 * `POST /conformance` from raw body bytes to response text (service.md §10). It runs on a
 * worker thread (`worker.ts`): the submission is parsed strictly, checked against
 * `submissionSchema`, graded against the corpus the worker has loaded, and the report signed
 * with the current service key.
 */
import type { Corpus } from "../../../conformance/corpus.js";
import { gradeSubmission } from "../../../conformance/grade.js";
import { signConformanceReport } from "../../../conformance/report.js";
import { submissionSchema } from "../../../conformance/submission.js";
import { bodyValidator } from "../../../validation/body-validator.js";
import type { Ed25519Signer } from "../../../verifier/crypto/ed25519.js";
import type { JsonObject } from "../../../verifier/json/value.js";
import {
  type Answer,
  answer,
  answerOrRefusal,
  errorAnswer,
  parseRequestJson,
  ServiceError,
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

const validateSubmission = bodyValidator(submissionSchema);

export async function answerConformanceRequest(
  bytes: Uint8Array,
  context: ConformanceRequestContext,
): Promise<Answer> {
  // Without a corpus nothing can be graded, whatever the body says.
  const corpus = await context.corpus();
  if (corpus === null) return errorAnswer("corpus_not_deployed");

  return answerOrRefusal(() => {
    const submission = parseRequestJson(bytes);
    const problem = validateSubmission(submission);
    if (problem !== null) throw new ServiceError("bad_submission", { detail: problem });
    try {
      // The schema admits only objects.
      const graded = gradeSubmission(corpus, submission as JsonObject);
      const report = signConformanceReport(graded, context.signer());
      return answer(200, { report, service: SERVICE_NAME });
    } catch (error) {
      // A code the grader adds does not compile until LIBRARY_ERROR_CODES maps it.
      throw refusalFor(error, (failure) => ({ detail: failure.detail })) ?? error;
    }
  });
}
