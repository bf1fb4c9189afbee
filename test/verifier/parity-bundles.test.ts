/**
 * Exact parity with the reference on every bundle vector of the three manifests:
 * verdict, errors (code, detail, receipt_id) in order, reasons in order and the summary.
 * Both sides are written with Python's `json.dumps(indent=2)` rules and compared as text.
 * No detail is knowingly different.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { verifyBundleBytes } from "../../src/verifier/bundle/verify-document.js";
import { dumpJson } from "../../src/verifier/json/dump.js";
import {
  BUNDLE_MANIFESTS,
  type BundleManifest,
  corpusBytes,
  corpusManifest,
  corpusValue,
} from "../support/corpus.js";

const expectedCounts: Record<string, number> = {
  "vectors/manifest.json": 40,
  "vectors/manifest-0.5.json": 21,
  "vectors/manifest-0.6.json": 16,
};

for (const manifestPath of BUNDLE_MANIFESTS) {
  const manifest = corpusManifest<BundleManifest>(manifestPath);
  describe(`bundle parity: ${manifestPath} (${manifest.spec})`, () => {
    test("the manifest has the expected number of vectors", () => {
      assert.equal(manifest.vectors.length, expectedCounts[manifestPath]);
    });
    for (const vector of manifest.vectors) {
      test(`${vector.file}${vector.require_anchor ? " (require_anchor)" : ""}`, () => {
        const result = verifyBundleBytes(corpusBytes(`vectors/${vector.file}`), {
          requireAnchor: vector.require_anchor,
          universalNewlines: true,
        });
        const expected = corpusValue(`expected/vectors/${vector.file}`);
        assert.equal(dumpJson(result, { indent: 2 }), dumpJson(expected, { indent: 2 }));
        assert.equal(result.verdict, vector.expected_verdict);
        if (vector.expected_code !== null) {
          assert.ok(result.errors.some((error) => error.code === vector.expected_code));
        }
      });
    }
  });
}
