/**
 * Replays `corpus/json/differential.json`: CPython's recorded answers for adversarial JSON
 * (see `scripts/gen-json-differential.py`, which produced it). Every case must come out of
 * our parser, canonical encoder and `pyRepr` exactly as it came out of Python, messages
 * included, because those messages end up verbatim in `malformed` error details.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import {
  type CanonicalFailure,
  CanonicalizationError,
  canonicalBytes,
  canonicalText,
} from "../../../src/verifier/json/canonical.js";
import {
  parseJson,
  StrictJsonError,
  type StrictJsonFailure,
} from "../../../src/verifier/json/parse.js";
import type { JsonValue } from "../../../src/verifier/json/value.js";
import { pyRepr } from "../../../src/verifier/py/repr.js";

interface ParsedOutcome {
  ok: true;
  repr: string;
  canonical_b64?: string;
  canonical_error?: string;
  canonical_error_type?: string;
}

interface RejectedOutcome {
  ok: false;
  error_type: string;
  /** Absent only in `ours` of a known difference, where the wording is not Python's. */
  message?: string;
}

type Outcome = ParsedOutcome | RejectedOutcome;

interface DifferentialCase {
  name: string;
  input_b64: string;
  outcome: Outcome;
  known_difference?: string;
  ours?: Outcome;
}

const CORPUS = new URL("../../../corpus/json/differential.json", import.meta.url);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const optionalString = (value: unknown): boolean =>
  value === undefined || typeof value === "string";

function isOutcome(value: unknown): value is Outcome {
  if (!isRecord(value)) return false;
  if (value.ok === false) {
    return typeof value.error_type === "string" && optionalString(value.message);
  }
  return (
    value.ok === true &&
    typeof value.repr === "string" &&
    (typeof value.canonical_b64 === "string") !== (typeof value.canonical_error === "string") &&
    optionalString(value.canonical_error_type)
  );
}

function isDifferentialCase(value: unknown): value is DifferentialCase {
  return (
    isRecord(value) &&
    typeof value.name === "string" &&
    typeof value.input_b64 === "string" &&
    isOutcome(value.outcome) &&
    (value.known_difference === undefined) === (value.ours === undefined) &&
    optionalString(value.known_difference) &&
    (value.ours === undefined || isOutcome(value.ours))
  );
}

function loadCorpus(): DifferentialCase[] {
  const raw: unknown = JSON.parse(readFileSync(CORPUS, "utf8"));
  assert.ok(Array.isArray(raw), "the corpus is a JSON array");
  return raw.map((entry, index) => {
    assert.ok(isDifferentialCase(entry), `corpus entry ${index} has an unexpected shape`);
    return entry;
  });
}

/** Which of our failure kinds stands for each exception Python raised. */
function failureFor(outcome: RejectedOutcome): StrictJsonFailure {
  switch (outcome.error_type) {
    case "UnicodeDecodeError":
      return "encoding";
    case "JSONDecodeError":
      return "syntax";
    case "RecursionError":
      return "nesting";
    case "ValueError":
      if (outcome.message?.startsWith("duplicate JSON object member: ")) return "duplicate_member";
      if (outcome.message?.startsWith("Exceeds the limit (4300 digits)")) return "integer_too_long";
  }
  throw new Error(`the corpus holds an exception this test cannot map: ${outcome.error_type}`);
}

function canonicalFailureFor(errorType: string | undefined): CanonicalFailure {
  return errorType === "UnicodeEncodeError" ? "lone_surrogate" : "float";
}

/** The outcome of one canonical encoder, in a shape that diffs readably. */
function encode(run: () => Uint8Array | string): { text: string } | { error: string } {
  try {
    const result = run();
    return { text: typeof result === "string" ? result : Buffer.from(result).toString("utf8") };
  } catch (error) {
    if (error instanceof CanonicalizationError) {
      return { error: `${error.reason}: ${error.message}` };
    }
    throw error;
  }
}

function parseOutcome(input: Buffer): { value: JsonValue } | { reason: string; message: string } {
  try {
    return { value: parseJson(input) };
  } catch (error) {
    if (error instanceof StrictJsonError) return { reason: error.reason, message: error.message };
    throw error;
  }
}

function assertMatches(input: Buffer, expected: Outcome): void {
  const parsed = parseOutcome(input);
  if (!expected.ok) {
    const actual = "value" in parsed ? { accepted: pyRepr(parsed.value) } : parsed;
    if (expected.message === undefined) {
      // Our own wording (a known difference): only the kind of failure is pinned.
      assert.deepEqual("reason" in actual ? { reason: actual.reason } : actual, {
        reason: failureFor(expected),
      });
    } else {
      assert.deepEqual(actual, { reason: failureFor(expected), message: expected.message });
    }
    return;
  }
  if (!("value" in parsed)) {
    assert.fail(`Python parsed this, we refused it (${parsed.reason}): ${parsed.message}`);
  }
  const { value } = parsed;
  assert.equal(pyRepr(value), expected.repr);
  const canonical =
    expected.canonical_b64 !== undefined
      ? { text: Buffer.from(expected.canonical_b64, "base64").toString("utf8") }
      : {
          error: `${canonicalFailureFor(expected.canonical_error_type)}: ${expected.canonical_error}`,
        };
  assert.deepEqual(
    encode(() => canonicalText(value)),
    canonical,
  );
  assert.deepEqual(
    encode(() => canonicalBytes(value)),
    canonical,
  );
  if (expected.canonical_b64 !== undefined) {
    // Decoding to text above would hide a byte-level difference; compare the bytes too.
    assert.equal(canonicalBytes(value).toString("base64"), expected.canonical_b64);
  }
}

const corpus = loadCorpus();

describe("JSON differential corpus (CPython 3.11 json.loads + canonical_bytes + repr)", () => {
  test("the corpus is substantial and its case names are unique", () => {
    assert.ok(corpus.length >= 150, `only ${corpus.length} cases`);
    assert.equal(new Set(corpus.map((c) => c.name)).size, corpus.length);
  });

  for (const differentialCase of corpus) {
    const input = Buffer.from(differentialCase.input_b64, "base64");
    const { known_difference: why, ours } = differentialCase;
    if (why !== undefined && ours !== undefined) {
      test(`${differentialCase.name} — known difference, asserting ours: ${why}`, () => {
        assertMatches(input, ours);
      });
    } else {
      test(differentialCase.name, () => {
        assertMatches(input, differentialCase.outcome);
      });
    }
  }
});
