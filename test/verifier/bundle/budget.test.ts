/**
 * The result budget (src/verifier/bundle/budget.ts): it charges exactly the bytes each error
 * and reason takes in a compact JSON answer, it never changes a verdict, and it stops
 * verification as soon as a request's entries pass the limit, including where one input
 * value is quoted once per record.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { describe, test } from "node:test";
import {
  ResultBudget,
  ResultBudgetExceeded,
  stringTextBytes,
} from "../../../src/verifier/bundle/budget.js";
import type { VerifyResult } from "../../../src/verifier/bundle/result.js";
import { verifyBundle } from "../../../src/verifier/bundle/verify-bundle.js";
import { dumpCompact } from "../../../src/verifier/json/dump.js";
import { parseJson, StrictJsonError } from "../../../src/verifier/json/parse.js";
import type { JsonValue } from "../../../src/verifier/json/value.js";
import {
  BUNDLE_MANIFESTS,
  type BundleManifest,
  corpusBytes,
  corpusManifest,
  corpusPath,
  corpusValue,
} from "../../support/corpus.js";

/** What the errors and reasons of `result` take in a compact JSON answer, separators aside. */
function entryBytes(result: VerifyResult): number {
  const entries: unknown[] = [
    ...result.errors,
    ...result.provisional_reasons,
    ...result.insufficient_reasons,
  ];
  return entries.reduce<number>((sum, entry) => sum + Buffer.byteLength(dumpCompact(entry)), 0);
}

/** Every corpus input that parses: bundle vectors (with their flag) and hostile cases. */
function corpusInputs(): { name: string; bundle: JsonValue; requireAnchor: boolean }[] {
  const inputs: { name: string; bundle: JsonValue; requireAnchor: boolean }[] = [];
  for (const manifestFile of BUNDLE_MANIFESTS) {
    for (const vector of corpusManifest<BundleManifest>(manifestFile).vectors) {
      inputs.push({
        name: vector.file,
        bundle: corpusValue(`vectors/${vector.file}`),
        requireAnchor: vector.require_anchor,
      });
    }
  }
  for (const file of readdirSync(corpusPath("hostile/cases")).sort()) {
    try {
      const bundle = parseJson(corpusBytes(`hostile/cases/${file}`));
      inputs.push({ name: `hostile/${file}`, bundle, requireAnchor: false });
      inputs.push({ name: `hostile/${file} (anchors required)`, bundle, requireAnchor: true });
    } catch (error) {
      if (!(error instanceof StrictJsonError)) throw error;
    }
  }
  return inputs;
}

const UNLIMITED = Number.MAX_SAFE_INTEGER;

describe("the result budget", () => {
  test("charges every corpus verdict exactly its entries' bytes and changes no verdict", () => {
    const inputs = corpusInputs();
    assert.ok(inputs.length > 400, `${inputs.length} corpus inputs`);
    let withEntries = 0;
    for (const { name, bundle, requireAnchor } of inputs) {
      const budget = new ResultBudget(UNLIMITED);
      const budgeted = verifyBundle(bundle, { requireAnchor, budget });
      assert.deepEqual(budgeted, verifyBundle(bundle, { requireAnchor }), name);
      assert.equal(budget.spent, entryBytes(budgeted), name);
      if (budget.spent > 0) withEntries++;
    }
    assert.ok(withEntries > 200, `${withEntries} inputs with errors or reasons`);
  });

  test("strings are measured as JSON writes them in UTF-8", () => {
    const strings = [
      "",
      "plain",
      'quote " and \\ backslash',
      "\b\t\n\f\r",
      "\u0000\u0001\u001f\u007f",
      "é ü ß",
      "中文",
      "emoji 😀",
      "lone high \ud800 here",
      "lone low \udc00 here",
      "high at the end \udbff",
      "\u2028\u2029",
    ];
    for (const value of strings) {
      assert.equal(stringTextBytes(value), Buffer.byteLength(JSON.stringify(value)), value);
    }
  });

  test("receipt ids of every kind are measured exactly", () => {
    // Each id as JSON text: strings with escapes, containers, big integers, floats, literals.
    const ids = [
      '"r-1"',
      '"nested \\"quote\\" é 😀 \\u0001 \\ud800"',
      '{"receipt_id":"x","n":[1,-2,12345678901234567890,1.5,1e400,null,true]}',
      '[{"a":{"b":[{},[]]}},"\\u0001"]',
      "12345678901234567890123",
      "-0.0",
      "false",
    ];
    const receipts = ids.map((id) => `{"receipt_id":${id}}`);
    const bundle = parseJson(
      `{"spec":"continuity-receipt/0.4","task_id":"t","receipts":[${receipts.join(",")}]}`,
    );
    const budget = new ResultBudget(UNLIMITED);
    const result = verifyBundle(bundle, { budget });
    assert.ok(result.errors.length > receipts.length);
    assert.equal(budget.spent, entryBytes(result));
  });

  test("a verdict exactly at the limit passes; one byte less is refused", () => {
    const bundle = corpusValue("vectors/03_tampered_body.json");
    const measured = new ResultBudget(UNLIMITED);
    const expected = verifyBundle(bundle, { budget: measured });
    assert.ok(measured.spent > 0);
    assert.deepEqual(verifyBundle(bundle, { budget: new ResultBudget(measured.spent) }), expected);
    assert.throws(
      () => verifyBundle(bundle, { budget: new ResultBudget(measured.spent - 1) }),
      (error: unknown) =>
        error instanceof ResultBudgetExceeded && error.limit === measured.spent - 1,
    );
  });

  test("early exits are charged too", () => {
    const budget = new ResultBudget(UNLIMITED);
    const result = verifyBundle(parseJson('{"spec":"continuity-receipt/9.9"}'), { budget });
    assert.equal(result.errors[0]?.code, "version_unsupported");
    assert.equal(budget.spent, entryBytes(result));
  });

  test("one budget spans several bundles: the one that passes the limit stops them", () => {
    const bundle = corpusValue("vectors/03_tampered_body.json");
    const one = new ResultBudget(UNLIMITED);
    verifyBundle(bundle, { budget: one });
    const shared = new ResultBudget(2 * one.spent);
    verifyBundle(bundle, { budget: shared });
    verifyBundle(bundle, { budget: shared });
    assert.equal(shared.spent, 2 * one.spent);
    const short = new ResultBudget(2 * one.spent - 1);
    verifyBundle(bundle, { budget: short });
    assert.throws(() => verifyBundle(bundle, { budget: short }), ResultBudgetExceeded);
  });

  test("a value quoted once per receipt stops at the limit instead of multiplying", () => {
    // The pass's 100 kB policy is quoted in each of 1,000 decisions' policy_mismatch: without
    // a bound that verdict would hold about 200 MB of errors from a 0.2 MB bundle.
    const policy = "p".repeat(100_000);
    const pass = `{"spec":"continuity-receipt/0.4","task_id":"t","type":"session.pass.created","body":{"policy_version":"${policy}"}}`;
    const decision =
      '{"spec":"continuity-receipt/0.4","task_id":"t","type":"task.decision","body":{"policy_version":"other"}}';
    const bundle = parseJson(
      `{"spec":"continuity-receipt/0.4","task_id":"t","receipts":[${pass}${`,${decision}`.repeat(1_000)}]}`,
    );
    const limit = 4 * 1024 * 1024;
    const budget = new ResultBudget(limit);
    assert.throws(() => verifyBundle(bundle, { budget }), ResultBudgetExceeded);
    // It stopped at the first entry past the limit: at most one 200 kB entry over it.
    assert.ok(budget.spent > limit && budget.spent < limit + 250_000, `${budget.spent}`);
  });

  test("a limit must be a whole number of bytes", () => {
    assert.throws(() => new ResultBudget(-1), RangeError);
    assert.throws(() => new ResultBudget(1.5), RangeError);
    assert.equal(new ResultBudget(0).limit, 0);
  });
});
