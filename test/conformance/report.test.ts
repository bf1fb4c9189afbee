/** The offline check of a signed conformance report (`conformance_submit.py --verify-report`). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadCorpus } from "../../src/conformance/corpus.js";
import { gradeSubmission } from "../../src/conformance/grade.js";
import { conformanceReportProblems, signConformanceReport } from "../../src/conformance/report.js";
import { generateSigner, signerFromSeed } from "../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { isObject, type JsonObject, jsonObject, PyFloat } from "../../src/verifier/json/value.js";
import { CORPUS_DIR } from "../support/corpus.js";
import { referenceSubmission } from "./reference-submission.js";

const corpus = await loadCorpus(CORPUS_DIR);
assert.ok(corpus !== null);
const signer = signerFromSeed(new Uint8Array(32).fill(7));

/** A freshly signed report, as a client reads it back from the response text. */
function report(): JsonObject {
  const signed = signConformanceReport(gradeSubmission(corpus!, referenceSubmission()), signer);
  const reread = parseJson(dumpCompact(signed));
  assert.ok(isObject(reread));
  return reread;
}

describe("conformanceReportProblems", () => {
  test("a report as the referee signs it verifies", () => {
    assert.deepEqual(conformanceReportProblems(report()), []);
  });

  test("any change to a signed member breaks the signature", () => {
    const altered = report();
    altered.set("verdict", "PARTIAL");
    assert.deepEqual(conformanceReportProblems(altered), [
      "the signature does not verify under the issuer's key",
    ]);
    const implementation = report();
    implementation.set("implementation", jsonObject({ name: "someone else" }));
    assert.equal(conformanceReportProblems(implementation).length, 1);
  });

  test("a report re-signed by another key under the referee's issuer is refused", () => {
    const forged = report();
    const other = generateSigner();
    const resigned = signConformanceReport(gradeSubmission(corpus!, referenceSubmission()), other);
    forged.set("sig", resigned.get("sig")!);
    assert.deepEqual(conformanceReportProblems(forged), ["sig.key is not the issuer"]);
  });

  test("kind, version, verdict, issuer and sig are checked", () => {
    const cases: [(r: JsonObject) => void, string][] = [
      [
        (r) => r.set("kind", "continuity-receipt-verification"),
        "kind is not continuity-receipt-conformance",
      ],
      [(r) => r.set("version", 2), "version is not 1"],
      [
        (r) => r.set("verdict", "MOSTLY"),
        "verdict is not one of CONFORMANT, PARTIAL, NONCONFORMANT",
      ],
      [(r) => r.set("issuer", "did:web:example.org"), "issuer is not an Ed25519 did:key"],
      [(r) => r.delete("sig"), "sig is not an ed25519 signature"],
      [(r) => r.set("submission_digest", new PyFloat(0.5)), "the report has no canonical form"],
    ];
    for (const [alter, problem] of cases) {
      const altered = report();
      alter(altered);
      const problems = conformanceReportProblems(altered);
      assert.ok(
        problems.some((found) => found.startsWith(problem)),
        `${problem}: ${problems.join("; ")}`,
      );
    }
    assert.deepEqual(conformanceReportProblems("report"), ["the report is not a JSON object"]);
  });
});
