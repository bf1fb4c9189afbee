/**
 * The differential test of `POST /notarize`'s request rules, written from issue 28's table
 * (not from the reference's code): every refusal code and every boundary it names.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  NotarizationError,
  type NotarizationErrorCode,
  type NotarizationRequest,
  parseNotarizationRequest,
} from "../../src/notarization/index.js";
import { parseJson } from "../../src/verifier/json/parse.js";

const HEX = "ab".repeat(32);
const DIGEST = `sha256:${HEX}`;

/** Parses `body` as the route will (strict JSON), then applies the rules. */
function parse(body: Record<string, unknown> | string): NotarizationRequest {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return parseNotarizationRequest(parseJson(text));
}

function refusal(body: Record<string, unknown> | string): NotarizationError {
  try {
    parse(body);
  } catch (error) {
    if (error instanceof NotarizationError) return error;
    throw error;
  }
  assert.fail(`accepted ${typeof body === "string" ? body : JSON.stringify(body)}`);
}

function refusedWith(body: Record<string, unknown> | string, code: NotarizationErrorCode): void {
  assert.equal(refusal(body).code, code);
}

/** `count` characters; `"é"` and `"😀"` are one code point each, as in Python's len. */
const chars = (count: number, unit = "a") => unit.repeat(count);
const metadataOf = (entries: number) =>
  Object.fromEntries(Array.from({ length: entries }, (_, index) => [`k${index}`, index]));

describe("notarization request: digests", () => {
  test("sha256:<64 hex> and bare 64 hex are accepted, normalised to lower-case sha256:<hex>", () => {
    assert.deepEqual(parse({ context_digest: DIGEST }), { context_digest: DIGEST });
    assert.deepEqual(parse({ context_digest: HEX }), { context_digest: DIGEST });
    assert.deepEqual(parse({ prompt_hash: HEX.toUpperCase() }), { prompt_hash: DIGEST });
    assert.deepEqual(parse({ prompt_hash: `SHA256:${HEX.toUpperCase()}` }), {
      prompt_hash: DIGEST,
    });
  });

  test("both digests present are both kept", () => {
    const other = "0f".repeat(32);
    assert.deepEqual(parse({ context_digest: HEX, prompt_hash: other }), {
      context_digest: DIGEST,
      prompt_hash: `sha256:${other}`,
    });
  });

  test("neither digest (absent or null) is missing_required_digest", () => {
    refusedWith({}, "missing_required_digest");
    refusedWith({ action: "x" }, "missing_required_digest");
    refusedWith({ context_digest: null, prompt_hash: null }, "missing_required_digest");
  });

  test("a malformed context_digest is invalid_context_digest, prompt_hash invalid_prompt_hash", () => {
    for (const bad of [
      HEX.slice(1),
      `${HEX}0`,
      `sha256:${HEX.slice(2)}`,
      `sha512:${HEX}`,
      `${"g".repeat(64)}`,
      ` ${HEX}`,
      `sha256: ${HEX}`,
      "",
      42,
      true,
      [HEX],
      { hex: HEX },
    ]) {
      refusedWith({ context_digest: bad }, "invalid_context_digest");
      refusedWith({ prompt_hash: bad }, "invalid_prompt_hash");
    }
    // A bad one is refused even beside a good one.
    refusedWith({ context_digest: HEX, prompt_hash: "nope" }, "invalid_prompt_hash");
    refusedWith({ context_digest: "nope", prompt_hash: HEX }, "invalid_context_digest");
  });
});

describe("notarization request: claims", () => {
  const limits = { action: 120, model: 100, agent_id: 120 } as const;
  for (const [field, limit] of Object.entries(limits)) {
    test(`${field}: ${limit} characters accepted, ${limit + 1} is invalid_field`, () => {
      assert.equal(
        parse({ context_digest: HEX, [field]: chars(limit) })[field as "action"],
        chars(limit),
      );
      const error = refusal({ context_digest: HEX, [field]: chars(limit + 1) });
      assert.equal(error.code, "invalid_field");
      assert.equal(error.field, field);
    });

    test(`${field}: characters are code points (Python's len), not UTF-16 units`, () => {
      // 😀 is two UTF-16 units: a UTF-16 count would refuse this at half the limit.
      assert.equal(
        parse({ context_digest: HEX, [field]: chars(limit, "😀") })[field as "action"],
        chars(limit, "😀"),
      );
      refusedWith({ context_digest: HEX, [field]: chars(limit + 1, "é") }, "invalid_field");
    });

    test(`${field}: a non-string is invalid_field; null counts as absent`, () => {
      for (const bad of [1, true, [], {}, 1.5]) {
        refusedWith({ context_digest: HEX, [field]: bad }, "invalid_field");
      }
      assert.deepEqual(parse({ context_digest: HEX, [field]: null }), { context_digest: DIGEST });
    });
  }

  test("an empty string is a string of at most the limit", () => {
    assert.equal(parse({ context_digest: HEX, action: "" }).action, "");
  });

  test("a body that is not an object is invalid_field", () => {
    for (const body of ["[]", '"x"', "1", "null"]) refusedWith(body, "invalid_field");
  });
});

describe("notarization request: metadata", () => {
  const withMetadata = (metadata: unknown) => ({ context_digest: HEX, metadata });

  test("16 entries accepted, 17 is invalid_metadata", () => {
    assert.equal(parse(withMetadata(metadataOf(16))).metadata?.size, 16);
    refusedWith(withMetadata(metadataOf(17)), "invalid_metadata");
  });

  test("metadata that is not an object is invalid_metadata; null counts as absent", () => {
    for (const bad of [[], "x", 1, true, [["k", "v"]]]) {
      refusedWith(withMetadata(bad), "invalid_metadata");
    }
    assert.deepEqual(parse(withMetadata(null)), { context_digest: DIGEST });
    assert.equal(parse(withMetadata({})).metadata?.size, 0);
  });

  test("keys: 64 ASCII characters accepted; 65, empty and non-ASCII are invalid_metadata_key", () => {
    assert.ok(parse(withMetadata({ [chars(64)]: 1 })).metadata?.has(chars(64)));
    refusedWith(withMetadata({ [chars(65)]: 1 }), "invalid_metadata_key");
    refusedWith(withMetadata({ "": 1 }), "invalid_metadata_key");
    refusedWith(withMetadata({ clé: 1 }), "invalid_metadata_key");
    refusedWith(withMetadata({ "😀": 1 }), "invalid_metadata_key");
    // ASCII control characters and punctuation are ASCII.
    assert.ok(parse(withMetadata({ "a b\t~": 1 })).metadata?.has("a b\t~"));
  });

  test("string values: 256 characters accepted, 257 is invalid_metadata_value", () => {
    assert.equal(parse(withMetadata({ k: chars(256, "😀") })).metadata?.get("k"), chars(256, "😀"));
    refusedWith(withMetadata({ k: chars(257) }), "invalid_metadata_value");
  });

  test("integers: ±(2^53 − 1) accepted; 2^53, −2^53 and floats are invalid_metadata_value", () => {
    const body = (value: string) => `{"context_digest":"${HEX}","metadata":{"n":${value}}}`;
    assert.equal(parse(body("9007199254740991")).metadata?.get("n"), 2 ** 53 - 1);
    assert.equal(parse(body("-9007199254740991")).metadata?.get("n"), -(2 ** 53 - 1));
    assert.equal(parse(body("0")).metadata?.get("n"), 0);
    for (const bad of ["9007199254740992", "-9007199254740992", "1e400", "1.5", "1.0", "1e3"]) {
      refusedWith(body(bad), "invalid_metadata_value");
    }
  });

  test("booleans and null are values; lists and objects are invalid_metadata_value", () => {
    const metadata = parse(withMetadata({ t: true, f: false, z: null })).metadata;
    assert.deepEqual(
      [...(metadata ?? [])],
      [
        ["t", true],
        ["f", false],
        ["z", null],
      ],
    );
    refusedWith(withMetadata({ k: [] }), "invalid_metadata_value");
    refusedWith(withMetadata({ k: { nested: 1 } }), "invalid_metadata_value");
  });
});

describe("notarization request: unsupported fields", () => {
  test("every unknown member is listed, in request order, under unsupported_fields", () => {
    const error = refusal({ context_digest: HEX, extra: 1, action: "a", context: "secret" });
    assert.equal(error.code, "unsupported_fields");
    assert.deepEqual(error.fields, ["extra", "context"]);
  });

  test("unknown members are reported before any other problem", () => {
    const error = refusal({ context_digest: "bad", sig: {} });
    assert.equal(error.code, "unsupported_fields");
    assert.deepEqual(error.fields, ["sig"]);
  });

  test("statement members a caller might try to set are unsupported", () => {
    for (const field of ["kind", "version", "issued_at", "issuer"]) {
      assert.deepEqual(refusal({ prompt_hash: HEX, [field]: "x" }).fields, [field]);
    }
  });
});

describe("notarization request: a full request", () => {
  test("every member at its limit is accepted and kept", () => {
    const request = parse({
      context_digest: HEX.toUpperCase(),
      prompt_hash: `sha256:${"cd".repeat(32)}`,
      action: chars(120),
      model: chars(100),
      agent_id: chars(120),
      metadata: { ...metadataOf(15), s: chars(256) },
    });
    assert.equal(request.context_digest, DIGEST);
    assert.equal(request.prompt_hash, `sha256:${"cd".repeat(32)}`);
    assert.equal(request.metadata?.size, 16);
  });
});
