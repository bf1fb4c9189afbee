/**
 * A conformance submission built the way `tools/conformance_submit.py` builds one, from the
 * reference implementation's recorded outputs (`expected/` and `hostile/expected/`), so it
 * should grade CONFORMANT against the corpus it came from.
 */
import { VERDICTS } from "../../src/verifier/bundle/result.js";
import { compareCodePoints } from "../../src/verifier/json/canonical.js";
import {
  isArray,
  isObject,
  type JsonObject,
  type JsonValue,
  jsonObject,
} from "../../src/verifier/json/value.js";
import { corpusManifest, corpusValue, type HostileIndex } from "../support/corpus.js";

interface FileManifest {
  vectors: { file: string }[];
}

function object(value: JsonValue): JsonObject {
  if (!isObject(value)) throw new Error("expected a JSON object");
  return value;
}

/** The sorted codes of a result's `errors` (Python's `sorted`, by code point). */
function sortedCodes(errors: JsonValue | undefined): string[] {
  if (!isArray(errors)) throw new Error("errors is not a list");
  return errors.map((entry) => String(object(entry).get("code"))).sort(compareCodePoints);
}

function bundleAnswers(): JsonObject {
  const answers: JsonObject = new Map();
  for (const { file } of corpusManifest<FileManifest>("vectors/manifest.json").vectors) {
    const result = object(corpusValue(`expected/vectors/${file}`));
    answers.set(
      file,
      jsonObject({
        verdict: result.get("verdict") ?? null,
        codes: sortedCodes(result.get("errors")),
      }),
    );
  }
  return answers;
}

function receiptAnswers(): JsonObject {
  const answers: JsonObject = new Map();
  const manifest = corpusManifest<FileManifest>("vectors/verification/manifest.json");
  for (const { file } of manifest.vectors) {
    const result = object(corpusValue(`expected/verification/${file}`));
    const errors = result.get("errors");
    if (!isArray(errors)) throw new Error(`${file}: errors is not a list`);
    answers.set(
      file,
      jsonObject({
        valid: result.get("valid") ?? null,
        errors: errors.map(String).sort(compareCodePoints),
      }),
    );
  }
  return answers;
}

/** `check_structured` of verifier.md §9.2 over the recorded exit code and output. */
function isStructured(exitCode: JsonValue | undefined, result: JsonValue | undefined): boolean {
  if (exitCode !== 0 && exitCode !== 1) return false;
  if (!isObject(result)) return false;
  const verdict = result.get("verdict");
  const errors = result.get("errors");
  return (
    VERDICTS.some((known) => known === verdict) &&
    isArray(errors) &&
    errors.every((entry) => isObject(entry) && typeof entry.get("code") === "string") &&
    (exitCode === 0) === (verdict === "TRUSTED")
  );
}

function hostileAnswers(): JsonObject {
  const answers: JsonObject = new Map();
  for (const entry of corpusManifest<HostileIndex>("hostile/index.json").cases) {
    const recorded = object(corpusValue(`hostile/${entry.expected_file}`));
    const result = object(recorded.get("result") ?? null);
    answers.set(
      entry.case,
      jsonObject({
        structured: isStructured(recorded.get("exit_code"), result),
        verdict: result.get("verdict") ?? null,
        codes: sortedCodes(result.get("errors")),
      }),
    );
  }
  return answers;
}

/** A fresh submission each call, so a test may alter its copy. */
export function referenceSubmission(): JsonObject {
  return jsonObject({
    implementation: jsonObject({
      name: "continuity-receipt",
      version: "0.5.0",
      language: "python",
      url: "",
    }),
    results: jsonObject({
      bundles: bundleAnswers(),
      verification_receipts: receiptAnswers(),
      hostile_inputs: hostileAnswers(),
    }),
  });
}

/** The answers of one section of `submission`, to alter in place. */
export function sectionOf(submission: JsonObject, section: string): JsonObject {
  return object(object(submission.get("results") ?? null).get(section) ?? null);
}
