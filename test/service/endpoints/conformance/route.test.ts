/** `POST /conformance`, the conformance referee (service.md §10), driven through `app.inject()`. */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { conformanceReportProblems } from "../../../../src/conformance/report.js";
import { sha256Digest } from "../../../../src/verifier/crypto/digest.js";
import { canonicalBytes } from "../../../../src/verifier/json/canonical.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import { isObject } from "../../../../src/verifier/json/value.js";
import { referenceSubmission, sectionOf } from "../../../conformance/reference-submission.js";
import { CORPUS_DIR } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const SERVICE = "continuity-receipt-verify";

const PINNED_CORPUS = {
  bundles: {
    vectors: 40,
    manifest_digest: "sha256:eac2c24d88129f19efed9ecf3712d33a537e651ba964e524d0725b0aa8a618b3",
  },
  verification_receipts: {
    vectors: 21,
    manifest_digest: "sha256:e6ecb5b1ab65a6980260291f75c29af790a0fbdc660732fb086f4ffda0aad007",
  },
  hostile_inputs: {
    vectors: 208,
    manifest_digest: "sha256:2a6af64f34aa4904774398211c51e6d9de60980be675f6fe8f37d6725360aa03",
  },
};

interface SectionResult {
  matched: number;
  total: number;
  mismatches: unknown[];
}

interface Report {
  kind: string;
  version: number;
  implementation: unknown;
  submission_digest: string;
  corpus: unknown;
  results: Record<string, SectionResult>;
  verdict: string;
  issued_at: string;
  issuer: string;
  sig: { alg: string; key: string; value: string };
}

/** `conformance_submit.py --verify-report`'s checks, done offline from the response text. */
function reportVerifies(responseText: string): boolean {
  const body = parseJson(responseText);
  assert.ok(isObject(body));
  return conformanceReportProblems(body.get("report") ?? null).length === 0;
}

describe("POST /conformance with ../shared/corpus deployed", () => {
  let service: TestService;
  const post = (payload: Buffer | string) =>
    service.app.inject({
      method: "POST",
      url: "/conformance",
      headers: { "content-type": "application/json" },
      payload,
    });
  before(async () => {
    service = await startTestService({ corpusDir: CORPUS_DIR });
  });
  after(() => service.close());

  test("the reference's outputs grade CONFORMANT in a signed report", async () => {
    const submission = referenceSubmission();
    const response = await post(dumpCompact(submission));
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
    const body = response.json<{ report: Report; service: string }>();
    assert.deepEqual(Object.keys(body), ["report", "service"]);
    assert.equal(body.service, SERVICE);
    const { report } = body;
    assert.deepEqual(Object.keys(report), [
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
    ]);
    assert.equal(report.kind, "continuity-receipt-conformance");
    assert.equal(report.version, 1);
    assert.deepEqual(report.implementation, {
      name: "continuity-receipt",
      version: "0.5.0",
      language: "python",
      url: "",
    });
    assert.equal(report.submission_digest, sha256Digest(canonicalBytes(submission)));
    assert.deepEqual(report.corpus, PINNED_CORPUS);
    assert.deepEqual(report.results, {
      bundles: { matched: 40, total: 40, mismatches: [] },
      verification_receipts: { matched: 21, total: 21, mismatches: [] },
      hostile_inputs: { matched: 208, total: 208, mismatches: [] },
    });
    assert.equal(report.verdict, "CONFORMANT");
    assert.match(report.issued_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(report.issuer, service.app.serviceIdentity.signer().did);
    assert.ok(reportVerifies(response.body));
  });

  test("one flipped verdict → PARTIAL listing exactly that vector", async () => {
    const submission = referenceSubmission();
    const entry = sectionOf(submission, "verification_receipts").get("12_revoked_issuer.json");
    assert.ok(isObject(entry));
    entry.set("valid", true);
    const response = await post(dumpCompact(submission));
    assert.equal(response.statusCode, 200);
    const { report } = response.json<{ report: Report }>();
    assert.equal(report.verdict, "PARTIAL");
    assert.deepEqual(report.results.verification_receipts, {
      matched: 20,
      total: 21,
      mismatches: [
        {
          id: "12_revoked_issuer.json",
          reason: "valid_mismatch",
          expected: { valid: false, errors: ["key_revoked"] },
          got: { valid: true, errors: ["key_revoked"] },
        },
      ],
    });
    assert.equal(report.results.bundles?.matched, 40);
    assert.equal(report.results.hostile_inputs?.matched, 208);
    assert.ok(reportVerifies(response.body));
  });

  test("a report altered after signing no longer verifies", async () => {
    const response = await post(dumpCompact(referenceSubmission()));
    const altered = response.body.replace('"verdict":"CONFORMANT"', '"verdict":"PARTIAL"');
    assert.notEqual(altered, response.body);
    assert.equal(reportVerifies(altered), false);
  });

  describe("refusals", () => {
    const minimal = (results: string, implementation = '{"name":"x"}') =>
      `{"implementation":${implementation},"results":${results}}`;
    const refusals: [string, string, object][] = [
      [
        "a body that is not JSON",
        "{",
        {
          error: "invalid_json",
          detail: "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        },
      ],
      [
        "a body that is not an object",
        "[]",
        { error: "bad_submission", detail: "body must be object" },
      ],
      [
        "no implementation",
        '{"results":{"hostile_inputs":{}}}',
        { error: "bad_submission", detail: "body must have required property 'implementation'" },
      ],
      [
        "no results",
        '{"implementation":{"name":"x"}}',
        { error: "bad_submission", detail: "body must have required property 'results'" },
      ],
      [
        "an unknown top-level member",
        '{"implementation":{"name":"x"},"results":{"hostile_inputs":{}},"extra":1}',
        { error: "bad_submission", detail: "body has an unexpected member 'extra'" },
      ],
      [
        "an implementation without a name",
        minimal('{"hostile_inputs":{}}', '{"version":"1"}'),
        {
          error: "bad_submission",
          detail: "body/implementation must have required property 'name'",
        },
      ],
      [
        "an empty name",
        minimal('{"hostile_inputs":{}}', '{"name":""}'),
        {
          error: "bad_submission",
          detail: "body/implementation/name must NOT have fewer than 1 characters",
        },
      ],
      [
        "a version that is not a string",
        minimal('{"hostile_inputs":{}}', '{"name":"x","version":1}'),
        { error: "bad_submission", detail: "body/implementation/version must be string" },
      ],
      [
        "an unknown implementation member",
        minimal('{"hostile_inputs":{}}', '{"name":"x","vendor":"y"}'),
        {
          error: "bad_submission",
          detail: "body/implementation has an unexpected member 'vendor'",
        },
      ],
      [
        "an unknown section",
        minimal('{"hostile_inputs":{},"bundle":{}}'),
        { error: "bad_submission", detail: "body/results has an unexpected member 'bundle'" },
      ],
      [
        "a section that is not an object",
        minimal('{"hostile_inputs":{},"bundles":[]}'),
        { error: "bad_submission", detail: "body/results/bundles must be object" },
      ],
      [
        "an answer that is not an object",
        minimal('{"hostile_inputs":{"repro.issuer=null":"UNTRUSTED"}}'),
        {
          error: "bad_submission",
          detail: "body/results/hostile_inputs/repro.issuer=null must be object",
        },
      ],
      [
        "no hostile_inputs while the hostile corpus is deployed",
        minimal('{"bundles":{}}'),
        {
          error: "missing_section",
          detail: "results.hostile_inputs is required while the hostile-input corpus is deployed",
        },
      ],
      [
        "a float somewhere in it",
        minimal('{"hostile_inputs":{"c":{"structured":true,"elapsed":0.5}}}'),
        {
          error: "submission_not_canonical",
          detail:
            "submission cannot be canonicalised: floats are not allowed in continuity receipts (v0)",
        },
      ],
    ];
    for (const [name, body, expected] of refusals) {
      test(`${name} → 400`, async () => {
        const response = await post(body);
        assert.equal(response.statusCode, 400);
        assert.deepEqual(response.json(), expected);
      });
    }
  });

  test("/openapi.json describes both routes as valid OpenAPI 3.1", async () => {
    const response = await service.app.inject({ method: "GET", url: "/openapi.json" });
    const document = response.json();
    for (const path of ["/conformance", "/verify-receipt"]) {
      const operation = document.paths[path]?.post;
      assert.ok(operation?.requestBody, `${path} documents its body`);
      assert.ok(operation.responses["200"], `${path} documents its 200`);
    }
    // Only these two paths: the other routes are not this suite's to judge.
    const ours = {
      ...document,
      paths: {
        "/conformance": document.paths["/conformance"],
        "/verify-receipt": document.paths["/verify-receipt"],
      },
    };
    const result = await new Validator().validate(ours);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
  });
});

describe("POST /conformance without a corpus", () => {
  let emptyDir: string;
  before(async () => {
    emptyDir = await mkdtemp(join(tmpdir(), "receiptd-empty-corpus-"));
  });
  after(() => rm(emptyDir, { recursive: true, force: true }));

  for (const [name, corpusDir] of [
    ["CORPUS_DIR unset", () => null],
    ["a CORPUS_DIR without manifests", () => emptyDir],
  ] as const) {
    test(`${name} → 503 corpus_not_deployed, whatever the body`, async () => {
      const service = await startTestService({ corpusDir: corpusDir() });
      try {
        for (const payload of [dumpCompact(referenceSubmission()), "{"]) {
          const response = await service.app.inject({
            method: "POST",
            url: "/conformance",
            payload,
          });
          assert.equal(response.statusCode, 503);
          assert.deepEqual(response.json(), { error: "corpus_not_deployed" });
        }
      } finally {
        await service.close();
      }
    });
  }
});
