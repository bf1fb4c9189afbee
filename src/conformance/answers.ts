/**
 * What a submission says about one vector, made from what a verifier's CLI did with it
 * (verifier.md §9.3, `tools/conformance_submit.py`): its exit code and the JSON it printed.
 * The same rules turn the reference's recorded outputs and a live run into entries.
 */
import { VERDICTS } from "../verifier/bundle/result.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import { isArray, isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";
import { sortedCodes } from "./corpus.js";

/** One verifier call: its exit code (null when it was killed) and what it printed, parsed. */
export interface VerifierOutcome {
  exitCode: number | null;
  /** stdout as strict JSON; undefined when it printed nothing usable. */
  output: JsonValue | undefined;
}

/** stdout parsed strictly; undefined when it is not JSON. */
export function parseVerifierOutput(stdout: Uint8Array): JsonValue | undefined {
  try {
    return parseJson(stdout);
  } catch (error) {
    if (error instanceof StrictJsonError) return undefined;
    throw error;
  }
}

function member(output: JsonValue | undefined, name: string): JsonValue | undefined {
  return isObject(output) ? output.get(name) : undefined;
}

/** The string codes of a result's `errors` (`[{code, …}]`), sorted as Python sorts them. */
function errorCodes(output: JsonValue | undefined): string[] {
  const errors = member(output, "errors");
  if (!isArray(errors)) return [];
  return sortedCodes(
    errors.flatMap((entry) => {
      const code = member(entry, "code");
      return typeof code === "string" ? [code] : [];
    }),
  );
}

/** `{verdict, codes}` for a bundle vector; a result it cannot read answers null and []. */
export function bundleAnswer(output: JsonValue | undefined): JsonObject {
  return new Map<string, JsonValue>([
    ["verdict", member(output, "verdict") ?? null],
    ["codes", errorCodes(output)],
  ]);
}

/** `{valid, errors}` for a verification-receipt vector (its `errors` are plain codes). */
export function receiptAnswer(output: JsonValue | undefined): JsonObject {
  const errors = member(output, "errors");
  const codes = isArray(errors)
    ? errors.filter((code): code is string => typeof code === "string")
    : [];
  return new Map<string, JsonValue>([
    ["valid", member(output, "valid") ?? null],
    ["errors", sortedCodes(codes)],
  ]);
}

/**
 * `check_structured` (verifier.md §9.2): exit code 0 or 1, a JSON object with a known
 * verdict and `errors` a list of objects with string codes, and exit 0 exactly for TRUSTED.
 */
export function isStructured({ exitCode, output }: VerifierOutcome): boolean {
  if (exitCode !== 0 && exitCode !== 1) return false;
  if (!isObject(output)) return false;
  const verdict = output.get("verdict");
  const errors = output.get("errors");
  return (
    VERDICTS.some((known) => known === verdict) &&
    isArray(errors) &&
    errors.every((entry) => isObject(entry) && typeof entry.get("code") === "string") &&
    (exitCode === 0) === (verdict === "TRUSTED")
  );
}

/** `{structured, verdict, codes}` for a hostile input. */
export function hostileAnswer(outcome: VerifierOutcome): JsonObject {
  return new Map<string, JsonValue>([
    ["structured", isStructured(outcome)],
    ["verdict", member(outcome.output, "verdict") ?? null],
    ["codes", errorCodes(outcome.output)],
  ]);
}
