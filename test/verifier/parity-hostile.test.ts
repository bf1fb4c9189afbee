/**
 * The 208 hostile inputs: every case gets a structured result (a JSON object with a valid
 * verdict and string codes, exit 0 iff TRUSTED), the 8 pinned cases match the manifest,
 * and every case is identical to the reference's full output, exit code included.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { main as verifyCli } from "../../src/cli/continuity-receipt-verify.js";
import { VERDICTS } from "../../src/verifier/bundle/result.js";
import { dumpJson } from "../../src/verifier/json/dump.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { isObject, member } from "../../src/verifier/json/value.js";
import {
  corpusManifest,
  corpusPath,
  corpusValue,
  type HostileIndex,
  type HostileManifest,
} from "../support/corpus.js";

const index = corpusManifest<HostileIndex>("hostile/index.json");
const manifest = corpusManifest<HostileManifest>("hostile/manifest.json");
const pinned = new Map(
  manifest.vectors.filter((v) => v.expected_verdict !== undefined).map((v) => [v.case, v]),
);

async function runCli(file: string): Promise<{ exitCode: number; stdout: string }> {
  let stdout = "";
  const exitCode = await verifyCli([corpusPath(`hostile/${file}`)], {
    stdout: (text) => {
      stdout += text;
    },
    stderr: () => {},
  });
  return { exitCode, stdout };
}

describe("hostile inputs", () => {
  test("the corpus has 208 cases, 8 of them pinned", () => {
    assert.equal(index.cases.length, 208);
    assert.equal(manifest.vectors.length, 208);
    assert.equal(pinned.size, 8);
  });

  for (const hostileCase of index.cases) {
    test(`${String(hostileCase.index).padStart(3, "0")} ${hostileCase.case}`, async () => {
      const { exitCode, stdout } = await runCli(hostileCase.file);
      const output = parseJson(stdout);
      assert.ok(isObject(output), "stdout is a JSON object");
      const verdict = member(output, "verdict");
      assert.ok(VERDICTS.includes(verdict as never), "valid verdict");
      const errors = member(output, "errors");
      assert.ok(Array.isArray(errors));
      const codes = errors.map((error) => (isObject(error) ? member(error, "code") : null));
      assert.ok(
        codes.every((code) => typeof code === "string"),
        "string codes",
      );
      assert.equal(exitCode, verdict === "TRUSTED" ? 0 : 1, "exit 0 iff TRUSTED");

      const pin = pinned.get(hostileCase.case);
      if (pin) {
        assert.equal(verdict, pin.expected_verdict);
        assert.deepEqual([...codes].sort(), pin.expected_codes);
      }

      const expected = corpusValue(`hostile/${hostileCase.expected_file}`);
      assert.ok(isObject(expected));
      assert.equal(exitCode, member(expected, "exit_code"));
      assert.equal(stdout, `${dumpJson(member(expected, "result"), { indent: 2 })}\n`);
    });
  }
});
