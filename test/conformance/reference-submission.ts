/**
 * A conformance submission built the way `tools/conformance_submit.py` builds one, from the
 * reference implementation's recorded outputs (`expected/` and `hostile/expected/`), so it
 * should grade CONFORMANT against the corpus it came from. The entries are made by the same
 * code as `receiptd conformance run` makes them from a live verifier.
 */
import { bundleAnswer, hostileAnswer, receiptAnswer } from "../../src/conformance/answers.js";
import {
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

function bundleAnswers(): JsonObject {
  const answers: JsonObject = new Map();
  for (const { file } of corpusManifest<FileManifest>("vectors/manifest.json").vectors) {
    answers.set(file, bundleAnswer(corpusValue(`expected/vectors/${file}`)));
  }
  return answers;
}

function receiptAnswers(): JsonObject {
  const answers: JsonObject = new Map();
  const manifest = corpusManifest<FileManifest>("vectors/verification/manifest.json");
  for (const { file } of manifest.vectors) {
    answers.set(file, receiptAnswer(corpusValue(`expected/verification/${file}`)));
  }
  return answers;
}

function hostileAnswers(): JsonObject {
  const answers: JsonObject = new Map();
  for (const entry of corpusManifest<HostileIndex>("hostile/index.json").cases) {
    const recorded = object(corpusValue(`hostile/${entry.expected_file}`));
    const exitCode = recorded.get("exit_code");
    answers.set(
      entry.case,
      hostileAnswer({
        exitCode: typeof exitCode === "number" ? exitCode : null,
        output: recorded.get("result"),
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
