/** Submission entries from what a verifier CLI did (verifier.md §9.2–§9.3). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  bundleAnswer,
  hostileAnswer,
  isStructured,
  parseVerifierOutput,
  receiptAnswer,
} from "../../src/conformance/answers.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { fromPlain } from "../../src/verifier/json/value.js";

const untrusted = fromPlain({
  verdict: "UNTRUSTED",
  errors: [
    { code: "malformed", detail: "x" },
    { code: "chain_break", detail: "y" },
    { code: "malformed", detail: "z" },
  ],
});

describe("entries from a verifier's output", () => {
  test("bundles: the verdict and every code, sorted as Python sorts", () => {
    assert.equal(
      dumpCompact(bundleAnswer(untrusted)),
      '{"verdict":"UNTRUSTED","codes":["chain_break","malformed","malformed"]}',
    );
  });

  test("receipts: validity and the plain error codes, sorted", () => {
    const output = fromPlain({ valid: false, errors: ["key_revoked", "bad_signature"] });
    assert.equal(
      dumpCompact(receiptAnswer(output)),
      '{"valid":false,"errors":["bad_signature","key_revoked"]}',
    );
  });

  test("output that is not a result answers null and no codes, whatever went wrong", () => {
    for (const output of [undefined, fromPlain([1, 2]), fromPlain({ errors: "many" })]) {
      assert.equal(dumpCompact(bundleAnswer(output)), '{"verdict":null,"codes":[]}');
      assert.equal(dumpCompact(receiptAnswer(output)), '{"valid":null,"errors":[]}');
    }
  });

  test("stdout that is not strict JSON is no output", () => {
    assert.equal(parseVerifierOutput(Buffer.from("")), undefined);
    assert.equal(parseVerifierOutput(Buffer.from("Traceback (most recent call last):")), undefined);
    assert.equal(parseVerifierOutput(Buffer.from('{"a":1,"a":2}')), undefined);
    assert.deepEqual(
      parseVerifierOutput(Buffer.from('{"verdict": "TRUSTED"}\n')),
      fromPlain({ verdict: "TRUSTED" }),
    );
  });
});

describe("isStructured (check_structured)", () => {
  const trusted = fromPlain({ verdict: "TRUSTED", errors: [] });

  test("a result whose exit code agrees with its verdict", () => {
    assert.equal(isStructured({ exitCode: 1, output: untrusted }), true);
    assert.equal(isStructured({ exitCode: 0, output: trusted }), true);
  });

  test("everything else is not structured", () => {
    const cases = [
      { exitCode: 0, output: untrusted },
      { exitCode: 1, output: trusted },
      { exitCode: 2, output: untrusted },
      { exitCode: null, output: untrusted },
      { exitCode: 1, output: undefined },
      { exitCode: 1, output: fromPlain({ verdict: "MAYBE", errors: [] }) },
      { exitCode: 1, output: fromPlain({ verdict: "UNTRUSTED", errors: [{ code: 7 }] }) },
      { exitCode: 1, output: fromPlain({ verdict: "UNTRUSTED", errors: ["malformed"] }) },
      { exitCode: 1, output: fromPlain({ verdict: "UNTRUSTED" }) },
    ];
    for (const outcome of cases) assert.equal(isStructured(outcome), false, dumpCompact(outcome));
  });

  test("hostile entries carry the check, the verdict and the codes", () => {
    assert.equal(
      dumpCompact(hostileAnswer({ exitCode: 1, output: untrusted })),
      '{"structured":true,"verdict":"UNTRUSTED","codes":["chain_break","malformed","malformed"]}',
    );
    assert.equal(
      dumpCompact(hostileAnswer({ exitCode: null, output: undefined })),
      '{"structured":false,"verdict":null,"codes":[]}',
    );
  });
});
