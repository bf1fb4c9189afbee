/**
 * Grading a conformance submission against the pinned corpus (verifier.md §9.3, the referee's
 * rules). Pure: the corpus is already loaded and the submission already parsed.
 *
 * Every vector of every deployed section is graded. An answer for a vector the manifest does
 * not list is ignored (the submission digest still covers it); a vector without an answer is
 * a `missing` mismatch, so an omitted or empty section counts as unanswered and the report
 * cannot be CONFORMANT without every deployed section.
 */

import { VERDICTS } from "../verifier/bundle/result.js";
import { CodedError } from "../verifier/coded-error.js";
import { sha256Digest } from "../verifier/crypto/digest.js";
import { CanonicalizationError, canonicalBytes } from "../verifier/json/canonical.js";
import { isArray, isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";
import {
  type BundleVector,
  type Corpus,
  type CorpusSummary,
  type HostileVector,
  type ReceiptVector,
  type Section,
  sortedCodes,
  summarizeCorpus,
} from "./corpus.js";

export const CONFORMANCE_REPORT_KIND = "continuity-receipt-conformance";
export const CONFORMANCE_REPORT_VERSION = 1;
export const CONFORMANCE_VERDICTS = ["CONFORMANT", "PARTIAL", "NONCONFORMANT"] as const;
export type ConformanceVerdict = (typeof CONFORMANCE_VERDICTS)[number];

/** Why a vector did not match: the first rule its answer broke, in the order they are checked. */
export type MismatchReason =
  | "missing"
  | "not_an_object"
  | "verdict_mismatch"
  | "code_missing"
  | "valid_mismatch"
  | "errors_mismatch"
  | "not_structured"
  | "bad_verdict"
  | "bad_codes"
  | "codes_mismatch";

export interface Mismatch {
  /** The manifest's file name or case label. */
  id: string;
  reason: MismatchReason;
  /** What the manifest pins for the vector. */
  expected: Record<string, JsonValue>;
  /** The submitted answer as it was sent, or null when there was none. */
  got: JsonValue;
}

export interface SectionResult {
  matched: number;
  total: number;
  /** In manifest order. */
  mismatches: Mismatch[];
}

export type SectionResults = Partial<Record<Section, SectionResult>>;

/** The report's members before it is dated and signed, in the report's member order. */
export interface GradedSubmission {
  kind: typeof CONFORMANCE_REPORT_KIND;
  version: typeof CONFORMANCE_REPORT_VERSION;
  implementation: JsonValue;
  submission_digest: string;
  corpus: CorpusSummary;
  results: SectionResults;
  verdict: ConformanceVerdict;
}

/** `bad_submission`: the submission does not match the submission schema (referee.ts). */
export type SubmissionErrorCode = "bad_submission" | "missing_section" | "submission_not_canonical";

/** A submission that has the right shape but still cannot be graded. */
export class SubmissionError extends CodedError<SubmissionErrorCode> {
  override readonly name = "SubmissionError";
}

function isStringList(value: JsonValue | undefined): value is string[] {
  return isArray(value) && value.every((item) => typeof item === "string");
}

/** Equal as multisets; `expected` is already sorted. */
function sameCodes(given: readonly string[], expected: readonly string[]): boolean {
  const sorted = sortedCodes(given);
  return sorted.length === expected.length && sorted.every((code, i) => code === expected[i]);
}

function isVerdict(value: JsonValue | undefined): boolean {
  return VERDICTS.some((verdict) => verdict === value);
}

/** Verdict equality, and the pinned code (when there is one) among the codes. */
function gradeBundle(vector: BundleVector, answer: JsonObject): MismatchReason | null {
  if (answer.get("verdict") !== vector.verdict) return "verdict_mismatch";
  if (vector.code === null) return null;
  const codes = answer.get("codes");
  return isArray(codes) && codes.includes(vector.code) ? null : "code_missing";
}

/** `valid` equality, and the error codes equal to the manifest's as a multiset. */
function gradeReceipt(vector: ReceiptVector, answer: JsonObject): MismatchReason | null {
  if (answer.get("valid") !== vector.valid) return "valid_mismatch";
  const errors = answer.get("errors");
  return isStringList(errors) && sameCodes(errors, vector.errors) ? null : "errors_mismatch";
}

/** A structured outcome, plus the pinned verdict and codes where the manifest has them. */
function gradeHostile(vector: HostileVector, answer: JsonObject): MismatchReason | null {
  if (answer.get("structured") !== true) return "not_structured";
  const verdict = answer.get("verdict");
  if (!isVerdict(verdict)) return "bad_verdict";
  const codes = answer.get("codes");
  if (!isStringList(codes)) return "bad_codes";
  if (vector.verdict !== null && verdict !== vector.verdict) return "verdict_mismatch";
  if (vector.codes !== null && !sameCodes(codes, vector.codes)) return "codes_mismatch";
  return null;
}

function expectedBundle(vector: BundleVector): Record<string, JsonValue> {
  return { verdict: vector.verdict, code: vector.code };
}

function expectedReceipt(vector: ReceiptVector): Record<string, JsonValue> {
  return { valid: vector.valid, errors: vector.errors };
}

function expectedHostile(vector: HostileVector): Record<string, JsonValue> {
  return {
    structured: true,
    ...(vector.verdict === null ? {} : { verdict: vector.verdict }),
    ...(vector.codes === null ? {} : { codes: vector.codes }),
  };
}

function gradeSection<Vector extends { id: string }>(
  vectors: readonly Vector[],
  answers: JsonValue | undefined,
  grade: (vector: Vector, answer: JsonObject) => MismatchReason | null,
  expected: (vector: Vector) => Record<string, JsonValue>,
): SectionResult {
  const mismatches: Mismatch[] = [];
  for (const vector of vectors) {
    const answer = isObject(answers) ? answers.get(vector.id) : undefined;
    let reason: MismatchReason | null;
    if (answer === undefined) reason = "missing";
    else if (!isObject(answer)) reason = "not_an_object";
    else reason = grade(vector, answer);
    if (reason !== null) {
      mismatches.push({ id: vector.id, reason, expected: expected(vector), got: answer ?? null });
    }
  }
  return { matched: vectors.length - mismatches.length, total: vectors.length, mismatches };
}

function overallVerdict(results: SectionResults): ConformanceVerdict {
  let matched = 0;
  let total = 0;
  for (const result of Object.values(results)) {
    matched += result.matched;
    total += result.total;
  }
  if (matched === total) return "CONFORMANT";
  return matched === 0 ? "NONCONFORMANT" : "PARTIAL";
}

/** `sha256:` + hex SHA-256 of the canonical (JCS) submission. */
function submissionDigest(submission: JsonObject): string {
  try {
    return sha256Digest(canonicalBytes(submission));
  } catch (error) {
    if (error instanceof CanonicalizationError) {
      throw new SubmissionError(
        "submission_not_canonical",
        `submission cannot be canonicalised: ${error.message}`,
      );
    }
    throw error;
  }
}

/**
 * Grades `submission` (already checked against `submissionSchema`) against `corpus` and
 * returns the report's members up to `verdict`. Throws `SubmissionError` when the hostile
 * section is required but absent, or the submission has no canonical form to digest.
 */
export function gradeSubmission(corpus: Corpus, submission: JsonObject): GradedSubmission {
  const submitted = submission.get("results");
  const answers = isObject(submitted) ? submitted : new Map<string, JsonValue>();
  if (corpus.hostile_inputs !== undefined && !answers.has("hostile_inputs")) {
    throw new SubmissionError(
      "missing_section",
      "results.hostile_inputs is required while the hostile-input corpus is deployed",
    );
  }
  const digest = submissionDigest(submission);

  // Deployed sections only, in section order; answers for any other section are ignored.
  const results: SectionResults = {};
  const { bundles, verification_receipts, hostile_inputs } = corpus;
  if (bundles !== undefined) {
    results.bundles = gradeSection(
      bundles.vectors,
      answers.get("bundles"),
      gradeBundle,
      expectedBundle,
    );
  }
  if (verification_receipts !== undefined) {
    results.verification_receipts = gradeSection(
      verification_receipts.vectors,
      answers.get("verification_receipts"),
      gradeReceipt,
      expectedReceipt,
    );
  }
  if (hostile_inputs !== undefined) {
    results.hostile_inputs = gradeSection(
      hostile_inputs.vectors,
      answers.get("hostile_inputs"),
      gradeHostile,
      expectedHostile,
    );
  }

  return {
    kind: CONFORMANCE_REPORT_KIND,
    version: CONFORMANCE_REPORT_VERSION,
    implementation: submission.get("implementation") ?? null,
    submission_digest: digest,
    corpus: summarizeCorpus(corpus),
    results,
    verdict: overallVerdict(results),
  };
}
