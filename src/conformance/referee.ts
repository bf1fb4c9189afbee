/**
 * What a referee does with a parsed submission (verifier.md §9.3): check it against the
 * submission schema, grade it against the corpus and sign the report. `POST /conformance`
 * (on a worker thread) and `receiptd conformance run` grading locally both call it, so it is
 * domain code here rather than the endpoint's.
 */
import { bodyValidator } from "../validation/body-validator.js";
import type { Ed25519Signer } from "../verifier/crypto/ed25519.js";
import type { JsonObject, JsonValue } from "../verifier/json/value.js";
import type { Corpus } from "./corpus.js";
import { gradeSubmission, SubmissionError } from "./grade.js";
import { signConformanceReport } from "./report.js";
import { submissionSchema } from "./submission.js";

const validateSubmission = bodyValidator(submissionSchema);

/** The signed report; a submission that cannot be graded throws `SubmissionError`. */
export function refereeReport(
  corpus: Corpus,
  submission: JsonValue,
  signer: Ed25519Signer,
): JsonObject {
  const problem = validateSubmission(submission);
  if (problem !== null) throw new SubmissionError("bad_submission", problem);
  // The schema admits only objects.
  return signConformanceReport(gradeSubmission(corpus, submission as JsonObject), signer);
}
