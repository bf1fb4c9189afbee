/** `POST /verify` request handling (service.md §0–§1), driven through `app.inject()`. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import { verifyVerificationReceipt } from "../../../../src/verifier/verification-receipt/index.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const TAMPERED = corpusBytes("vectors/03_tampered_body.json");
/** TRUSTED as is, PROVISIONAL (`anchor_missing`) when anchors are required. */
const ANCHORLESS = corpusBytes("vectors/10b_anchor_missing.json");

const BAD_SHAPE = {
  error: "bad_shape",
  detail: 'body must be a bundle object, {"bundle": {...}} or {"bundles": [...]}',
};

interface Payload {
  verdict: string;
  errors: { code: string; detail: string; receipt_id: unknown }[];
  provisional_reasons: string[];
  verification_receipt?: Record<string, unknown>;
  verification_receipt_error?: string;
  service?: string;
}

interface BatchPayload {
  results: Payload[];
  count: number;
  service: string;
}

function batchOf(...items: (Buffer | string)[]): Buffer {
  const parts = items.flatMap((item, index) => [
    ...(index === 0 ? [] : [Buffer.from(",")]),
    Buffer.from(item),
  ]);
  return Buffer.concat([Buffer.from('{"bundles":['), ...parts, Buffer.from("]}")]);
}

/** A copy of the minimal bundle with a float member: it has no canonical digest. */
function bundleWithFloat(): Buffer {
  const text = GOOD.toString("utf8");
  return Buffer.from(`{"float_note": 1.5, ${text.slice(text.indexOf("{") + 1)}`);
}

describe("POST /verify", () => {
  let service: TestService;
  const post = (url: string, payload: Buffer | string) =>
    service.app.inject({
      method: "POST",
      url,
      headers: { "content-type": "application/json" },
      payload,
    });
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  describe("query flags are parsed: only 1 and true enable", () => {
    for (const query of ["require_anchor=1", "require_anchor=true"]) {
      test(`?${query} requires anchors`, async () => {
        const payload = (await post(`/verify?${query}`, ANCHORLESS)).json<Payload>();
        assert.equal(payload.verdict, "PROVISIONAL");
      });
    }
    for (const query of [
      "",
      "?require_anchor=0",
      "?require_anchor=false",
      "?require_anchor=yes",
      "?require_anchor=TRUE",
      "?require_anchor",
      "?require_anchor=1&require_anchor=1",
      "?norequire_anchor=1",
    ]) {
      test(`/verify${query} does not require anchors`, async () => {
        const payload = (await post(`/verify${query}`, ANCHORLESS)).json<Payload>();
        assert.equal(payload.verdict, "TRUSTED");
      });
    }
    for (const query of ["receipt=1", "receipt=true"]) {
      test(`?${query} adds a verification receipt`, async () => {
        const payload = (await post(`/verify?${query}`, GOOD)).json<Payload>();
        assert.equal(typeof payload.verification_receipt, "object");
      });
    }
    for (const query of ["noreceipt=1", "receipt=0", "receipt=yes", "receipt=false", "receipt"]) {
      test(`?${query} adds no receipt`, async () => {
        const payload = (await post(`/verify?${query}`, GOOD)).json<Payload>();
        assert.equal(payload.verification_receipt, undefined);
        assert.equal(payload.verification_receipt_error, undefined);
      });
    }
    test("?cache=1 adds only the cache member to the payload", async () => {
      const plain = JSON.parse((await post("/verify", GOOD)).body);
      const { cache, ...cached } = JSON.parse((await post("/verify?cache=1", GOOD)).body);
      assert.equal(cache.hit, false);
      assert.deepEqual(cached, plain);
    });
  });

  describe("strict parsing: 400 invalid_json", () => {
    const cases: [string, Buffer | string, string | RegExp][] = [
      ["a duplicate member", '{"spec": "a", "spec": "b"}', "duplicate JSON object member: 'spec'"],
      [
        "a nested duplicate member",
        '{"bundle": {"receipts": [{"x": 1, "x": 1}]}}',
        "duplicate JSON object member: 'x'",
      ],
      [
        "a UTF-8 byte order mark",
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), GOOD]),
        "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
      ],
      [
        "invalid UTF-8",
        Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
        "'utf-8' codec can't decode byte 0xff in position 2: invalid start byte",
      ],
      ["trailing data", '{"spec": "x"} {}', "Extra data: line 1 column 15 (char 14)"],
      ["an empty body", "", "Expecting value: line 1 column 1 (char 0)"],
      [
        "nesting beyond the parser's 1,000 levels",
        `${"[".repeat(1001)}${"]".repeat(1001)}`,
        /^maximum recursion depth exceeded/,
      ],
    ];
    for (const [name, payload, detail] of cases) {
      test(name, async () => {
        const response = await post("/verify", payload);
        assert.equal(response.statusCode, 400);
        const body = response.json<{ error: string; detail: string }>();
        assert.deepEqual(Object.keys(body), ["error", "detail"]);
        assert.equal(body.error, "invalid_json");
        if (typeof detail === "string") assert.equal(body.detail, detail);
        else assert.match(body.detail, detail);
      });
    }
    test("a bundle nested deeper than 64 (but parseable) is a verdict, not an HTTP error", async () => {
      const deep = `${"[".repeat(70)}${"]".repeat(70)}`;
      const response = await post("/verify", `{"spec": "continuity-receipt/0.4", "deep": ${deep}}`);
      assert.equal(response.statusCode, 200);
      const payload = response.json<Payload>();
      assert.equal(payload.verdict, "UNTRUSTED");
      assert.equal(payload.errors[0]?.code, "nesting_too_deep");
    });

    test("a body with no Content-Type at all is still read as JSON", async () => {
      const response = await service.app.inject({ method: "POST", url: "/verify", payload: GOOD });
      assert.equal(response.statusCode, 200);
      assert.equal(response.json<Payload>().verdict, "TRUSTED");
    });
  });

  describe("body forms", () => {
    for (const [name, payload] of [
      ["an array", "[]"],
      ["a string", '"bundle"'],
      ["a number", "1"],
      ["null", "null"],
      ['{"bundle": <not an object>}', '{"bundle": [1]}'],
      ['{"bundle": null}', '{"bundle": null}'],
    ] as const) {
      test(`${name} → 400 bad_shape`, async () => {
        const response = await post("/verify", payload);
        assert.equal(response.statusCode, 400);
        assert.deepEqual(response.json(), BAD_SHAPE);
      });
    }

    test("bundles that is not an array does not make a batch: the body is the bundle", async () => {
      const response = await post("/verify", '{"bundles": {}}');
      assert.equal(response.statusCode, 200);
      const payload = response.json<Payload>();
      assert.equal(payload.verdict, "UNTRUSTED");
      assert.equal(payload.service, "continuity-receipt-verify");
    });

    test("a batch beats a bundle member when both are present", async () => {
      const body = `{"bundle": ${GOOD}, "bundles": [${TAMPERED}]}`;
      const payload = (await post("/verify", body)).json<BatchPayload>();
      assert.equal(payload.count, 1);
      assert.equal(payload.results[0]?.verdict, "UNTRUSTED");
    });
  });

  describe("batches", () => {
    test("51 bundles → 400 batch_too_large", async () => {
      const response = await post("/verify", batchOf(...Array(51).fill(GOOD)));
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), { error: "batch_too_large", limit: 50 });
    });

    test("50 bundles are verified", async () => {
      const payload = (
        await post("/verify", batchOf(...Array(50).fill(GOOD)))
      ).json<BatchPayload>();
      assert.equal(payload.count, 50);
      assert.ok(payload.results.every((result) => result.verdict === "TRUSTED"));
    });

    test("an empty batch is a valid request with no results", async () => {
      const response = await post("/verify", '{"bundles": []}');
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), {
        results: [],
        count: 0,
        service: "continuity-receipt-verify",
      });
    });

    test("good, bad and non-object items each get their own result, in order", async () => {
      const response = await post(
        "/verify",
        batchOf(GOOD, "5", TAMPERED, '"text"', "null", "[]", GOOD),
      );
      assert.equal(response.statusCode, 200);
      const payload = response.json<BatchPayload>();
      assert.equal(payload.count, 7);
      assert.equal(payload.service, "continuity-receipt-verify");
      assert.deepEqual(
        payload.results.map((result) => result.verdict),
        ["TRUSTED", "UNTRUSTED", "UNTRUSTED", "UNTRUSTED", "UNTRUSTED", "UNTRUSTED", "TRUSTED"],
      );
      for (const index of [1, 3, 4, 5]) {
        assert.deepEqual(payload.results[index]?.errors, [
          { code: "malformed", detail: "bundle is not an object", receipt_id: null },
        ]);
      }
      assert.notEqual(payload.results[2]?.errors[0]?.code, "malformed");
      for (const result of payload.results) assert.equal(result.service, undefined);
    });
  });

  describe("?receipt=1", () => {
    let issuer: string;
    before(async () => {
      issuer = (await service.app.inject({ method: "GET", url: "/info" })).json<{
        issuer: string;
      }>().issuer;
    });

    test("a single bundle's receipt verifies against the bundle and names the /info issuer", async () => {
      const payload = (await post("/verify?receipt=1", TAMPERED)).json<Payload>();
      const receipt = payload.verification_receipt;
      assert.ok(receipt);
      assert.equal(receipt.issuer, issuer);
      assert.equal(receipt.verdict, payload.verdict);
      assert.match(String(receipt.verified_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      const check = verifyVerificationReceipt(parseJson(JSON.stringify(receipt)), {
        bundle: TAMPERED,
      });
      assert.deepEqual(check.errors, []);
      assert.equal(check.valid, true);
      assert.equal(check.digest_match, true);
    });

    test("each batch result carries its own receipt; items without one say why", async () => {
      const response = await post(
        "/verify?receipt=1",
        batchOf(GOOD, TAMPERED, "7", bundleWithFloat()),
      );
      const [good, tampered, number, withFloat] = response.json<BatchPayload>().results;
      for (const [result, bytes] of [
        [good, GOOD],
        [tampered, TAMPERED],
      ] as const) {
        assert.ok(result?.verification_receipt);
        const check = verifyVerificationReceipt(
          parseJson(JSON.stringify(result.verification_receipt)),
          { bundle: bytes },
        );
        assert.equal(check.valid, true);
        assert.equal(check.digest_match, true);
      }
      assert.equal(number?.verification_receipt, undefined);
      assert.equal(number?.verification_receipt_error, "bundle is not an object");
      assert.equal(withFloat?.verification_receipt, undefined);
      assert.match(String(withFloat?.verification_receipt_error), /cannot be canonicalised/);
    });

    test("a single bundle holding floats gets verification_receipt_error", async () => {
      const payload = (await post("/verify?receipt=1", bundleWithFloat())).json<Payload>();
      assert.equal(payload.verification_receipt, undefined);
      assert.match(String(payload.verification_receipt_error), /cannot be canonicalised/);
      assert.equal(payload.service, "continuity-receipt-verify");
    });
  });
});
