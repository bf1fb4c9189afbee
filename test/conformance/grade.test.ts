/** Grading submissions and signing reports (verifier.md §9.3, service.md §10). */
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { type Corpus, loadCorpus } from "../../src/conformance/corpus.js";
import {
  type GradedSubmission,
  gradeSubmission,
  type Mismatch,
  SubmissionError,
} from "../../src/conformance/grade.js";
import { signConformanceReport } from "../../src/conformance/report.js";
import { sha256Digest } from "../../src/verifier/crypto/digest.js";
import { signerFromSeed, verifyEd25519 } from "../../src/verifier/crypto/ed25519.js";
import { canonicalBytes } from "../../src/verifier/json/canonical.js";
import {
  type JsonObject,
  type JsonValue,
  jsonObject,
  member,
  PyFloat,
  toPlain,
} from "../../src/verifier/json/value.js";
import { CORPUS_DIR } from "../support/corpus.js";
import { referenceSubmission, sectionOf } from "./reference-submission.js";

let corpus: Corpus;
before(async () => {
  const loaded = await loadCorpus(CORPUS_DIR);
  assert.ok(loaded !== null);
  corpus = loaded;
});

/** The single mismatch of a section, as plain data. */
function onlyMismatch(graded: GradedSubmission, section: keyof Corpus): unknown {
  const mismatches = graded.results[section]?.mismatches ?? [];
  assert.equal(mismatches.length, 1, JSON.stringify(mismatches.map((m) => m.id)));
  const [mismatch] = mismatches as [Mismatch];
  return { ...mismatch, expected: mismatch.expected, got: toPlain(mismatch.got) };
}

function answer(submission: JsonObject, section: string, id: string): JsonObject {
  const entry = sectionOf(submission, section).get(id);
  assert.ok(entry instanceof Map, `${section} has no answer for ${id}`);
  return entry;
}

describe("gradeSubmission", () => {
  test("the reference's own outputs are CONFORMANT: 40/40, 21/21, 208/208", () => {
    const submission = referenceSubmission();
    const graded = gradeSubmission(corpus, submission);
    assert.equal(graded.kind, "continuity-receipt-conformance");
    assert.equal(graded.version, 1);
    assert.equal(graded.verdict, "CONFORMANT");
    assert.deepEqual(graded.results, {
      bundles: { matched: 40, total: 40, mismatches: [] },
      verification_receipts: { matched: 21, total: 21, mismatches: [] },
      hostile_inputs: { matched: 208, total: 208, mismatches: [] },
    });
    assert.equal(graded.implementation, submission.get("implementation"));
    assert.equal(graded.submission_digest, sha256Digest(canonicalBytes(submission)));
    assert.deepEqual(Object.keys(graded.corpus), [
      "bundles",
      "verification_receipts",
      "hostile_inputs",
    ]);
  });

  test("one flipped verdict → PARTIAL with exactly that mismatch", () => {
    const submission = referenceSubmission();
    answer(submission, "bundles", "05_cap_exceeded.json").set("verdict", "TRUSTED");
    const graded = gradeSubmission(corpus, submission);
    assert.equal(graded.verdict, "PARTIAL");
    assert.equal(graded.results.bundles?.matched, 39);
    assert.deepEqual(onlyMismatch(graded, "bundles"), {
      id: "05_cap_exceeded.json",
      reason: "verdict_mismatch",
      expected: { verdict: "UNTRUSTED", code: "cap_exceeded" },
      got: { verdict: "TRUSTED", codes: ["cap_exceeded"] },
    });
    assert.equal(graded.results.verification_receipts?.matched, 21);
    assert.equal(graded.results.hostile_inputs?.matched, 208);
  });

  describe("bundles: verdict equality and the pinned code among the codes", () => {
    const cases: [string, string, (entry: JsonObject) => void, string | null][] = [
      [
        "extra codes beside the pinned one",
        "03_tampered_body.json",
        (e) => e.set("codes", ["x", "bad_signature"]),
        null,
      ],
      [
        "the pinned code absent",
        "03_tampered_body.json",
        (e) => e.set("codes", ["chain_break"]),
        "code_missing",
      ],
      [
        "codes that are not a list",
        "03_tampered_body.json",
        (e) => e.set("codes", "bad_signature"),
        "code_missing",
      ],
      [
        "no pinned code: codes are not looked at",
        "07_redacted_no_disclosure.json",
        (e) => e.delete("codes"),
        null,
      ],
      [
        "a verdict in another case",
        "01_happy_minimal.json",
        (e) => e.set("verdict", "trusted"),
        "verdict_mismatch",
      ],
    ];
    for (const [name, file, alter, reason] of cases) {
      test(name, () => {
        const submission = referenceSubmission();
        alter(answer(submission, "bundles", file));
        const mismatches = gradeSubmission(corpus, submission).results.bundles?.mismatches ?? [];
        assert.deepEqual(
          mismatches.map((m) => [m.id, m.reason]),
          reason === null ? [] : [[file, reason]],
        );
      });
    }
  });

  describe("verification receipts: validity and the error multiset", () => {
    const file = "03_tampered_verdict.json";
    const cases: [string, (entry: JsonObject) => void, string | null][] = [
      ["errors in any order", (e) => e.set("errors", ["verdict_mismatch", "bad_signature"]), null],
      ["an error missing", (e) => e.set("errors", ["bad_signature"]), "errors_mismatch"],
      [
        "an error repeated",
        (e) => e.set("errors", ["bad_signature", "bad_signature", "verdict_mismatch"]),
        "errors_mismatch",
      ],
      ["errors that are not strings", (e) => e.set("errors", [1, 2]), "errors_mismatch"],
      ["valid flipped", (e) => e.set("valid", true), "valid_mismatch"],
      ["valid as a number", (e) => e.set("valid", 0), "valid_mismatch"],
    ];
    for (const [name, alter, reason] of cases) {
      test(name, () => {
        const submission = referenceSubmission();
        alter(answer(submission, "verification_receipts", file));
        const graded = gradeSubmission(corpus, submission);
        const mismatches = graded.results.verification_receipts?.mismatches ?? [];
        assert.deepEqual(
          mismatches.map((m) => [m.id, m.reason]),
          reason === null ? [] : [[file, reason]],
        );
      });
    }

    test("a mismatch shows the sorted expected errors", () => {
      const submission = referenceSubmission();
      answer(submission, "verification_receipts", "06_bad_version.json").set("errors", []);
      assert.deepEqual(onlyMismatch(gradeSubmission(corpus, submission), "verification_receipts"), {
        id: "06_bad_version.json",
        reason: "errors_mismatch",
        expected: { valid: false, errors: ["bad_signature", "bad_version"] },
        got: { valid: false, errors: [] },
      });
    });
  });

  describe("hostile inputs: a structured outcome, plus the pinned verdict and codes", () => {
    const pinned = "boundary.nesting_too_deep";
    const cases: [string, boolean, (entry: JsonObject) => void, string | null][] = [
      ["not structured", false, (e) => e.set("structured", false), "not_structured"],
      ["structured as a string", false, (e) => e.set("structured", "true"), "not_structured"],
      ["a verdict outside the enum", false, (e) => e.set("verdict", "CRASHED"), "bad_verdict"],
      ["codes that are not strings", false, (e) => e.set("codes", [null]), "bad_codes"],
      [
        "unpinned: any verdict and codes",
        false,
        (e) => e.set("verdict", "TRUSTED").set("codes", ["x"]),
        null,
      ],
      ["pinned: another verdict", true, (e) => e.set("verdict", "PROVISIONAL"), "verdict_mismatch"],
      [
        "pinned: another code list",
        true,
        (e) => e.set("codes", ["nesting_too_deep", "malformed"]),
        "codes_mismatch",
      ],
    ];
    for (const [name, isPinned, alter, reason] of cases) {
      test(name, () => {
        const submission = referenceSubmission();
        const id = isPinned ? pinned : [...sectionOf(submission, "hostile_inputs").keys()][8]!;
        alter(answer(submission, "hostile_inputs", id));
        const mismatches = gradeSubmission(corpus, submission).results.hostile_inputs?.mismatches;
        assert.deepEqual(
          mismatches?.map((m) => [m.id, m.reason]),
          reason === null ? [] : [[id, reason]],
        );
      });
    }

    test("the expected member names only what the manifest pins", () => {
      const submission = referenceSubmission();
      const unpinned = [...sectionOf(submission, "hostile_inputs").keys()][20]!;
      answer(submission, "hostile_inputs", pinned).set("codes", []);
      answer(submission, "hostile_inputs", unpinned).set("structured", false);
      const mismatches = gradeSubmission(corpus, submission).results.hostile_inputs?.mismatches;
      assert.deepEqual(
        mismatches?.map((m) => [m.id, m.expected]),
        [
          [pinned, { structured: true, verdict: "UNTRUSTED", codes: ["nesting_too_deep"] }],
          [unpinned, { structured: true }],
        ],
      );
    });
  });

  test("missing answers and answers that are not objects are mismatches", () => {
    const submission = referenceSubmission();
    sectionOf(submission, "bundles").delete("02_happy_full.json");
    sectionOf(submission, "bundles").set("04_missing_termination.json", "UNTRUSTED");
    const mismatches = gradeSubmission(corpus, submission).results.bundles?.mismatches ?? [];
    assert.deepEqual(
      mismatches.map((m) => [m.id, m.reason, toPlain(m.got)]),
      [
        ["02_happy_full.json", "missing", null],
        ["04_missing_termination.json", "not_an_object", "UNTRUSTED"],
      ],
    );
  });

  test("answers for vectors the manifest does not list are ignored", () => {
    const submission = referenceSubmission();
    sectionOf(submission, "bundles").set(
      "22_local_state_commitment.json",
      jsonObject({ verdict: "MAYBE", codes: [] }),
    );
    const graded = gradeSubmission(corpus, submission);
    assert.equal(graded.verdict, "CONFORMANT");
    assert.equal(graded.submission_digest, sha256Digest(canonicalBytes(submission)));
  });

  test("an omitted optional section is graded as unanswered", () => {
    const submission = referenceSubmission();
    (submission.get("results") as JsonObject).delete("verification_receipts");
    const graded = gradeSubmission(corpus, submission);
    assert.equal(graded.verdict, "PARTIAL");
    const receipts = graded.results.verification_receipts;
    assert.equal(receipts?.matched, 0);
    assert.equal(receipts?.total, 21);
    assert.ok(receipts?.mismatches.every((m) => m.reason === "missing" && m.got === null));
  });

  test("nothing matched → NONCONFORMANT", () => {
    const submission = jsonObject({
      implementation: jsonObject({ name: "nothing" }),
      results: jsonObject({ hostile_inputs: jsonObject({}) }),
    });
    const graded = gradeSubmission(corpus, submission);
    assert.equal(graded.verdict, "NONCONFORMANT");
    assert.deepEqual(
      Object.values(graded.results).map((result) => [result.matched, result.total]),
      [
        [0, 40],
        [0, 21],
        [0, 208],
      ],
    );
  });

  test("hostile_inputs is required while the hostile corpus is deployed", () => {
    const submission = referenceSubmission();
    (submission.get("results") as JsonObject).delete("hostile_inputs");
    assert.throws(
      () => gradeSubmission(corpus, submission),
      (error: unknown) =>
        error instanceof SubmissionError &&
        error.code === "missing_section" &&
        error.detail ===
          "results.hostile_inputs is required while the hostile-input corpus is deployed",
    );
  });

  test("without a hostile corpus the section is neither required nor graded", () => {
    const partial: Corpus = { bundles: corpus.bundles };
    const submission = referenceSubmission();
    const graded = gradeSubmission(partial, submission);
    assert.deepEqual(Object.keys(graded.results), ["bundles"]);
    assert.deepEqual(Object.keys(graded.corpus), ["bundles"]);
    assert.equal(graded.verdict, "CONFORMANT");
    (submission.get("results") as JsonObject).delete("hostile_inputs");
    assert.equal(gradeSubmission(partial, submission).verdict, "CONFORMANT");
  });

  test("a submission without a canonical form cannot be digested", () => {
    const submission = referenceSubmission();
    answer(submission, "bundles", "01_happy_minimal.json").set("ms", new PyFloat(1.5));
    assert.throws(
      () => gradeSubmission(corpus, submission),
      (error: unknown) =>
        error instanceof SubmissionError &&
        error.code === "submission_not_canonical" &&
        /floats are not allowed/.test(error.detail),
    );
  });
});

describe("signConformanceReport", () => {
  const signer = signerFromSeed(new Uint8Array(32).fill(3));

  test("members in order, signed over the canonical report without sig", () => {
    const submission = referenceSubmission();
    answer(submission, "hostile_inputs", "boundary.deep_json").set("verdict", "PROVISIONAL");
    const report = signConformanceReport(
      gradeSubmission(corpus, submission),
      signer,
      "2026-01-02T03:04:05Z",
    );
    assert.deepEqual(
      [...report.keys()],
      [
        "kind",
        "version",
        "implementation",
        "submission_digest",
        "corpus",
        "results",
        "verdict",
        "issued_at",
        "issuer",
        "sig",
      ],
    );
    assert.equal(member(report, "issued_at"), "2026-01-02T03:04:05Z");
    assert.equal(member(report, "issuer"), signer.did);
    assert.equal(member(report, "verdict"), "PARTIAL");
    const sig = member(report, "sig") as JsonObject;
    assert.deepEqual(toPlain(sig as JsonValue), {
      alg: "ed25519",
      key: signer.did,
      value: sig.get("value"),
    });
    const signed = canonicalBytes(report, "sig");
    assert.ok(verifyEd25519(signer.did, signed, String(sig.get("value"))));
    report.set("verdict", "CONFORMANT");
    assert.ok(!verifyEd25519(signer.did, canonicalBytes(report, "sig"), String(sig.get("value"))));
  });

  test("issued_at defaults to now, in whole seconds", () => {
    const report = signConformanceReport(gradeSubmission(corpus, referenceSubmission()), signer);
    assert.match(String(member(report, "issued_at")), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});
