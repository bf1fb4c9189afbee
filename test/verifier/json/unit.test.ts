/**
 * Hand-written checks of the Python-parity primitives under `src/verifier/json`, `src/verifier/py`,
 * `src/verifier/crypto/base64.ts` and `src/verifier/timestamps.ts`. Every expected value that
 * describes Python behaviour was produced by CPython 3.11 and pasted here as a literal, so the
 * suite never needs a Python interpreter.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Base64Error, pyB64uDecode } from "../../../src/verifier/crypto/base64.js";
import {
  canonicalBytes,
  canonicalText,
  compareCodePoints,
} from "../../../src/verifier/json/canonical.js";
import { dumpJson } from "../../../src/verifier/json/dump.js";
import { PARSER_MAX_DEPTH, parseJson } from "../../../src/verifier/json/parse.js";
import {
  type JsonObject,
  type JsonValue,
  jsonObject,
  normalizeInteger,
  PyFloat,
  toPlain,
} from "../../../src/verifier/json/value.js";
import { pyRepr } from "../../../src/verifier/py/repr.js";
import {
  PyOverflowError,
  PyValueError,
  pyEquals,
  pyInt,
  pyTruthy,
} from "../../../src/verifier/py/semantics.js";
import {
  isValidTimestamp,
  pyIsoformat,
  TimestampCrash,
  timestampMillis,
} from "../../../src/verifier/timestamps.js";

const FLOAT_REFUSED = {
  name: "CanonicalizationError",
  reason: "float",
  message: "floats are not allowed in continuity receipts (v0)",
};

function parseObject(text: string): JsonObject {
  const value = parseJson(text);
  assert.ok(value instanceof Map, `expected an object from ${text}`);
  return value;
}

function nestedArrays(depth: number): string {
  return "[".repeat(depth) + "]".repeat(depth);
}

describe("canonical form: the RFC 8785 examples that apply to an integer-only subset", () => {
  // RFC 8785 §3.2.3. The reference sorts with Python's str ordering (code points), while the
  // RFC sorts by UTF-16 code units, so the two disagree on where U+1F600 goes relative to
  // U+FB33: the RFC puts the emoji first, Python (and we) put it last.
  const sortingExample = String.raw`{
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  }`;

  test("sorting example: members ordered by code point, as Python sorts (not UTF-16 as the RFC)", () => {
    assert.equal(
      canonicalText(parseJson(sortingExample)),
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control",' +
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
        '"\ufb33":"Hebrew Letter Dalet With Dagesh","\u{1F600}":"Emoji: Grinning Face"}',
    );
  });

  test("non-BMP keys sort after U+E000–U+FFFF (UTF-16 order would put them first)", () => {
    assert.equal(
      canonicalText(parseJson(String.raw`{"\ue000":1,"\ud83d\ude00":2,"\uffff":3}`)),
      '{"\ue000":1,"\uffff":3,"\u{1F600}":2}',
    );
    assert.ok(compareCodePoints("\u{10000}", "\uffff") > 0);
    assert.ok(compareCodePoints("\ue000", "\u{1F600}") < 0);
    assert.ok(compareCodePoints("a", "ab") < 0);
    assert.equal(compareCodePoints("\u{1F600}", "\u{1F600}"), 0);
  });

  test("string escaping example (the literals part; its numbers are floats, refused below)", () => {
    const text = String.raw`{"string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]}`;
    assert.equal(
      canonicalText(parseJson(text)),
      String.raw`{"literals":[null,true,false],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  test("U+007F, U+2028, U+2029 and non-ASCII stay raw UTF-8; C0 controls use lowercase \\u00xx", () => {
    const value = parseJson(String.raw`"\u007f\u2028\u2029\u00e9\u0001\u001f\b\f\n\r\t"`);
    assert.equal(canonicalText(value), '"\x7f\u2028\u2029\u00e9\\u0001\\u001f\\b\\f\\n\\r\\t"');
    assert.deepEqual(
      canonicalBytes(value),
      Buffer.from("227fe280a8e280a9c3a95c75303030315c75303031665c625c665c6e5c725c7422", "hex"),
    );
  });

  test("the RFC's number serialisation does not apply: any float is refused, wherever it is", () => {
    const numbersExample = `{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "x", "literals": [null, true, false]}`;
    assert.throws(() => canonicalText(parseJson(numbersExample)), FLOAT_REFUSED);
    for (const text of ["1.0", "[0.5]", '{"a":{"b":[1e2]}}', "NaN", "-Infinity", "-0.0"]) {
      assert.throws(() => canonicalBytes(parseJson(text)), FLOAT_REFUSED, text);
    }
  });

  test("integers of any size are written in plain decimal", () => {
    assert.equal(canonicalText(parseJson("1000000000000000000000000000000")), `1${"0".repeat(30)}`);
    assert.equal(
      canonicalText(parseJson("[-9007199254740993,9007199254740991]")),
      "[-9007199254740993,9007199254740991]",
    );
    assert.equal(canonicalText(10n ** 30n), `1${"0".repeat(30)}`);
  });

  test("omitTopLevelKey drops the member only at the top level", () => {
    const receipt = parseJson('{"sig":{"sig":1},"b":{"sig":2},"a":1.5}');
    assert.throws(() => canonicalText(receipt, "sig"), FLOAT_REFUSED);
    const unsignedView = parseJson('{"sig":1.5,"b":{"sig":2},"a":1}');
    assert.equal(canonicalText(unsignedView, "sig"), '{"a":1,"b":{"sig":2}}');
  });
});

describe("parser: adversarial inputs", () => {
  test("lone surrogate escapes are kept, and only canonical encoding refuses them", () => {
    const value = parseJson(String.raw`{"k":"a\ud800"}`);
    assert.ok(value instanceof Map);
    assert.equal(value.get("k"), "a\ud800");
    assert.equal(pyRepr(value), "{'k': 'a\\ud800'}");
    assert.throws(() => canonicalText(value), {
      name: "CanonicalizationError",
      reason: "lone_surrogate",
      message:
        "'utf-8' codec can't encode character '\\ud800' in position 7: surrogates not allowed",
    });
  });

  test("integers: 4300 digits parse exactly, 4301 are refused like Python's int limit", () => {
    const digits4300 = `9${"0".repeat(4299)}`;
    assert.equal(parseJson(digits4300), BigInt(digits4300));
    assert.equal(parseJson(`-${digits4300}`), -BigInt(digits4300));
    for (const text of [`${digits4300}0`, `-${digits4300}0`, `[${digits4300}0]`]) {
      assert.throws(() => parseJson(text), {
        name: "StrictJsonError",
        reason: "integer_too_long",
        message:
          "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; use sys.set_int_max_str_digits() to increase the limit",
      });
    }
  });

  test("integers have one representation: safe ones are numbers, the rest bigints", () => {
    assert.equal(parseJson("9007199254740991"), 9007199254740991);
    assert.equal(parseJson("-9007199254740991"), -9007199254740991);
    assert.equal(parseJson("9007199254740992"), 9007199254740992n);
    assert.equal(normalizeInteger(42n), 42);
  });

  test("-0 is the integer 0; -0.0 is a float that keeps its sign", () => {
    assert.ok(Object.is(parseJson("-0"), 0));
    assert.equal(canonicalText(parseJson("[-0]")), "[0]");
    const negativeZero = parseJson("-0.0");
    assert.ok(negativeZero instanceof PyFloat && Object.is(negativeZero.value, -0));
    assert.equal(pyRepr(negativeZero), "-0.0");
  });

  test("nesting: the default cap is 1000 levels, and maxDepth lowers it", () => {
    assert.equal(PARSER_MAX_DEPTH, 1000);
    assert.doesNotThrow(() => parseJson(nestedArrays(1000)));
    assert.throws(() => parseJson(nestedArrays(1001)), {
      name: "StrictJsonError",
      reason: "nesting",
    });
    assert.throws(() => parseJson(nestedArrays(100_000)), { reason: "nesting" });
    assert.doesNotThrow(() => parseJson(nestedArrays(64), { maxDepth: 64 }));
    assert.throws(() => parseJson(nestedArrays(65), { maxDepth: 64 }), { reason: "nesting" });
    const deepObjects = `${'{"a":'.repeat(64)}1${"}".repeat(64)}`;
    assert.throws(() => parseJson(deepObjects, { maxDepth: 63 }), { reason: "nesting" });
  });

  test("duplicate member names are compared after unescaping, at any depth", () => {
    for (const text of [
      String.raw`{"a":1,"\u0061":2}`,
      String.raw`{"\u0061":1,"a":2}`,
      String.raw`[{"x":{"a":1,"a\u0000":2,"\u0061":3}}]`,
    ]) {
      assert.throws(() => parseJson(text), {
        name: "StrictJsonError",
        reason: "duplicate_member",
        message: "duplicate JSON object member: 'a'",
      });
    }
    assert.throws(() => parseJson(String.raw`{"it's":1,"it\u0027s":2}`), {
      message: `duplicate JSON object member: "it's"`,
    });
  });

  test("__proto__, constructor and integer-like names are plain members in document order", () => {
    const value = parseObject('{"b":1,"1":2,"0":3,"__proto__":{"polluted":true},"constructor":5}');
    assert.deepEqual([...value.keys()], ["b", "1", "0", "__proto__", "constructor"]);
    assert.equal(pyRepr(value.get("__proto__")), "{'polluted': True}");
    assert.equal(value.get("constructor"), 5);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(
      pyRepr(value),
      "{'b': 1, '1': 2, '0': 3, '__proto__': {'polluted': True}, 'constructor': 5}",
    );
    assert.equal(
      canonicalText(value),
      '{"0":3,"1":2,"__proto__":{"polluted":true},"b":1,"constructor":5}',
    );
    const plain = toPlain(value);
    assert.ok(typeof plain === "object" && plain !== null);
    assert.ok(Object.hasOwn(plain, "__proto__"));
    assert.equal(Object.getPrototypeOf(plain), Object.prototype);
  });

  test("universalNewlines reproduces Python text-mode positions (CRLF → LF)", () => {
    // Python: json.loads('{\n"a":1\n,}') after open(..., "r") turned CRLF into LF.
    assert.throws(() => parseJson('{\r\n"a":1\r\n,}', { universalNewlines: true }), {
      reason: "syntax",
      message: "Expecting property name enclosed in double quotes: line 3 column 2 (char 9)",
    });
  });

  test("string input skips UTF-8 decoding but still refuses a BOM", () => {
    assert.equal(parseJson('"\u00e9"'), "\u00e9");
    assert.throws(() => parseJson("\ufeff{}"), {
      reason: "syntax",
      message: "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
    });
  });
});

describe("dumpJson matches Python's json.dumps", () => {
  // Each expectation is json.dumps(json.loads(input, object_pairs_hook=…), indent=2), then
  // json.dumps(…) with default separators, then ensure_ascii=False with (",", ":").
  const cases: { input: string; indented: string; oneLine: string; compact: string | null }[] = [
    {
      input:
        '{"verdict":"UNTRUSTED","errors":[{"code":"malformed","detail":"bundle is not valid JSON: Expecting value: line 1 column 1 (char 0)"}]}',
      indented:
        '{\n  "verdict": "UNTRUSTED",\n  "errors": [\n    {\n      "code": "malformed",\n      "detail": "bundle is not valid JSON: Expecting value: line 1 column 1 (char 0)"\n    }\n  ]\n}',
      oneLine:
        '{"verdict": "UNTRUSTED", "errors": [{"code": "malformed", "detail": "bundle is not valid JSON: Expecting value: line 1 column 1 (char 0)"}]}',
      compact:
        '{"verdict":"UNTRUSTED","errors":[{"code":"malformed","detail":"bundle is not valid JSON: Expecting value: line 1 column 1 (char 0)"}]}',
    },
    {
      input: '{"a":[],"b":{},"c":[1,[2,{}]],"d":null,"e":true,"f":false}',
      indented:
        '{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    [\n      2,\n      {}\n    ]\n  ],\n  "d": null,\n  "e": true,\n  "f": false\n}',
      oneLine: '{"a": [], "b": {}, "c": [1, [2, {}]], "d": null, "e": true, "f": false}',
      compact: '{"a":[],"b":{},"c":[1,[2,{}]],"d":null,"e":true,"f":false}',
    },
    {
      input: String.raw`{"s":"\u00e9\ud83d\ude00\u2028\u0000\u007f\"\\/\n\t","lone":"\ud800"}`,
      indented:
        '{\n  "s": "\\u00e9\\ud83d\\ude00\\u2028\\u0000\\u007f\\"\\\\/\\n\\t",\n  "lone": "\\ud800"\n}',
      oneLine:
        '{"s": "\\u00e9\\ud83d\\ude00\\u2028\\u0000\\u007f\\"\\\\/\\n\\t", "lone": "\\ud800"}',
      // Python writes the lone surrogate raw here, which no UTF-8 output can carry.
      compact: null,
    },
    {
      input: "[0,-1,12345678901234567890,1.5,1e16,1e-7,NaN,Infinity,-Infinity,-0.0,-0]",
      indented:
        "[\n  0,\n  -1,\n  12345678901234567890,\n  1.5,\n  1e+16,\n  1e-07,\n  NaN,\n  Infinity,\n  -Infinity,\n  -0.0,\n  0\n]",
      oneLine:
        "[0, -1, 12345678901234567890, 1.5, 1e+16, 1e-07, NaN, Infinity, -Infinity, -0.0, 0]",
      compact: "[0,-1,12345678901234567890,1.5,1e+16,1e-07,NaN,Infinity,-Infinity,-0.0,0]",
    },
    { input: '"x"', indented: '"x"', oneLine: '"x"', compact: '"x"' },
    { input: "[]", indented: "[]", oneLine: "[]", compact: "[]" },
    { input: "{}", indented: "{}", oneLine: "{}", compact: "{}" },
  ];

  for (const { input, indented, oneLine, compact } of cases) {
    test(input.length > 60 ? `${input.slice(0, 60)}…` : input, () => {
      const value = parseJson(input);
      assert.equal(dumpJson(value, { indent: 2 }), indented);
      assert.equal(dumpJson(value), oneLine);
      if (compact !== null) {
        assert.equal(dumpJson(value, { ensureAscii: false, separators: [",", ":"] }), compact);
      }
    });
  }

  test("ensureAscii=false escapes lone surrogates, where Python would emit them raw", () => {
    assert.equal(
      dumpJson(parseJson(String.raw`["\ud800"]`), { ensureAscii: false }),
      '["\\ud800"]',
    );
  });
});

describe("pyInt matches Python int()", () => {
  const NUMERIC_TEXT: [label: string, input: string, expected: bigint | "ValueError"][] = [
    ["surrounding spaces", " 7 ", 7n],
    ["ASCII whitespace \\t\\n\\v\\f\\r", "\t\n\v\f\r7 ", 7n],
    ["U+3000 ideographic space", "\u30007\u3000", 7n],
    ["U+0085 and U+00A0", "\x857\xa0", 7n],
    ["other Unicode spaces", "\u16807\u2000\u200a\u2028\u2029\u202f\u205f", 7n],
    // str.isspace() is true for \x1c-\x1f, but int() only maps non-ASCII spaces to ' ' and then
    // skips C isspace(), so these ASCII separators are refused.
    ["\\x1c before the digits", "\x1c7", "ValueError"],
    ["\\x1f after the digits", "7\x1f", "ValueError"],
    ["\\x1c-\\x1f with other whitespace", "\t\n\v\f\r7\x1c\x1d\x1e\x1f", "ValueError"],
    ["zero-width space", "\u200b7", "ValueError"],
    ["U+180E (not a space since Unicode 6.3)", "\u180e7", "ValueError"],
    ["plus sign", "+7", 7n],
    ["minus sign", "-7", -7n],
    ["negative zero", "-0", 0n],
    ["two signs", "+-7", "ValueError"],
    ["sign then space", "- 7", "ValueError"],
    ["underscore separators", "1_000_000", 1000000n],
    ["leading underscore", "_1", "ValueError"],
    ["trailing underscore", "1_", "ValueError"],
    ["double underscore", "1__0", "ValueError"],
    ["Arabic-Indic digits", "\u0661\u0662\u0663", 123n],
    ["fullwidth digits", "\uff11\uff12", 12n],
    ["mathematical bold digits", "\u{1D7CF}\u{1D7D0}", 12n],
    ["underscore between Unicode digits", "\u0663_\u0664", 34n],
    ["Bengali zero and nine", "\u09e6\u09ef", 9n],
    ["Tangsa digits (Unicode 14)", "\u{16AC0}\u{16AC9}", 9n],
    ["mathematical digits of each style", "\u{1D7CE}\u{1D7D8}\u{1D7E2}\u{1D7EC}\u{1D7F6}", 0n],
    ["micro sign", "\u00b5", "ValueError"],
    ["superscript five", "\u2075", "ValueError"],
    ["Roman numeral", "\u2164", "ValueError"],
    ["empty", "", "ValueError"],
    ["only a space", " ", "ValueError"],
    ["decimal fraction", "1.5", "ValueError"],
    ["hex", "0x10", "ValueError"],
    ["exponent", "1e5", "ValueError"],
    ["leading zeros", "007", 7n],
    ["inner space", "1 2", "ValueError"],
    ["inner NUL", "1\x002", "ValueError"],
    ["20 digits", "12345678901234567890", 12345678901234567890n],
    ["4300 digits", "1".repeat(4300), BigInt("1".repeat(4300))],
    ["4301 digits", "1".repeat(4301), "ValueError"],
  ];

  /** The result, or the Python exception name, so a mismatch shows both sides. */
  const intOutcome = (input: string): bigint | "ValueError" => {
    try {
      return pyInt(input);
    } catch (error) {
      if (error instanceof PyValueError) return "ValueError";
      throw error;
    }
  };

  for (const [label, input, expected] of NUMERIC_TEXT) {
    test(`int(str): ${label}`, () => assert.equal(intOutcome(input), expected));
  }

  test("known difference: digits added after Unicode 14 (CPython 3.11 refuses them, Node's tables know them)", () => {
    // Nag Mundari digit one, Unicode 15.0: int('\U0001e4f1') raises in 3.11, is 1 in 3.12+.
    assert.equal(pyInt("\u{1E4F1}"), 1n);
  });

  test("int(float) truncates; NaN is a ValueError and ±inf an OverflowError", () => {
    assert.equal(pyInt(new PyFloat(1.9)), 1n);
    assert.equal(pyInt(new PyFloat(-1.9)), -1n);
    assert.equal(pyInt(new PyFloat(-0)), 0n);
    assert.equal(pyInt(new PyFloat(1e20)), 100000000000000000000n);
    assert.equal(pyInt(new PyFloat(2 ** 70)), 1180591620717411303424n);
    assert.throws(() => pyInt(new PyFloat(Number.NaN)), PyValueError);
    assert.throws(() => pyInt(new PyFloat(Number.POSITIVE_INFINITY)), PyOverflowError);
    assert.throws(() => pyInt(new PyFloat(Number.NEGATIVE_INFINITY)), PyOverflowError);
  });

  test("int(bool), int(int); None, lists and dicts are refused", () => {
    assert.equal(pyInt(true), 1n);
    assert.equal(pyInt(false), 0n);
    assert.equal(pyInt(-5), -5n);
    assert.equal(pyInt(9007199254740993n), 9007199254740993n);
    for (const refused of [null, [], new Map<string, JsonValue>()]) {
      assert.throws(() => pyInt(refused), PyValueError);
    }
  });
});

describe("pyEquals matches Python ==", () => {
  const one = 1;
  const cases: [label: string, a: JsonValue, b: JsonValue, expected: boolean][] = [
    ["True == 1", true, one, true],
    ["1 == 1.0", one, new PyFloat(1), true],
    ["True == 1.0", true, new PyFloat(1), true],
    ["False == 0", false, 0, true],
    ["False == -0.0", false, new PyFloat(-0), true],
    ["None != False", null, false, false],
    ["None == None", null, null, true],
    ["'1' != 1", "1", one, false],
    ["'a' == 'a'", "a", "a", true],
    ["1e20 == 10**20", new PyFloat(1e20), 10n ** 20n, true],
    ["float(2**53) != 2**53 + 1", new PyFloat(2 ** 53), 2n ** 53n + 1n, false],
    ["[True, 0] == [1, False]", [true, 0], [one, false], true],
    ["[1] != [1, 1]", [one], [one, one], false],
    ["[] != {}", [], new Map<string, JsonValue>(), false],
    [
      "dicts compare without regard to order, values with ==",
      jsonObject({ a: 1, b: [1] }),
      jsonObject({ b: [new PyFloat(1)], a: true }),
      true,
    ],
    ["{'a': 1} != {'a': 1, 'b': 2}", jsonObject({ a: 1 }), jsonObject({ a: 1, b: 2 }), false],
    ["{'a': None} != {'b': None}", jsonObject({ a: null }), jsonObject({ b: null }), false],
    ["nan != nan", new PyFloat(Number.NaN), new PyFloat(Number.NaN), false],
  ];
  for (const [label, a, b, expected] of cases) {
    test(label, () => {
      assert.equal(pyEquals(a, b), expected);
      assert.equal(pyEquals(b, a), expected);
    });
  }

  test("a NaN value is unequal even to itself", () => {
    const nan = parseJson("NaN");
    assert.equal(pyEquals(nan, nan), false);
  });

  test("NaN inside containers: equal, because json's NaN is one shared object", () => {
    // json.loads("[NaN]") == json.loads("[NaN]") is True in CPython: every NaN token becomes
    // the same float object, and list/dict comparison checks identity before ==.
    assert.equal(pyEquals(parseJson("[NaN]"), parseJson("[NaN]")), true);
    assert.equal(pyEquals(parseJson('{"a":NaN}'), parseJson('{"a":NaN}')), true);
  });

  test("missing (undefined) behaves as None", () => {
    assert.equal(pyEquals(undefined, null), true);
    assert.equal(pyEquals(undefined, false), false);
  });
});

describe("pyTruthy matches Python bool()", () => {
  const cases: [label: string, value: JsonValue | undefined, expected: boolean][] = [
    ["None", null, false],
    ["missing", undefined, false],
    ["False", false, false],
    ["True", true, true],
    ["0", 0, false],
    ["1", 1, true],
    ["10**20", 10n ** 20n, true],
    ["0.0", new PyFloat(0), false],
    ["-0.0", new PyFloat(-0), false],
    ["nan", new PyFloat(Number.NaN), true],
    ["''", "", false],
    ["'0'", "0", true],
    ["' '", " ", true],
    ["[]", [], false],
    ["[0]", [0], true],
    ["{}", new Map<string, JsonValue>(), false],
    ["{'': None}", jsonObject({ "": null }), true],
  ];
  for (const [label, value, expected] of cases) {
    test(`bool(${label}) is ${expected}`, () => assert.equal(pyTruthy(value), expected));
  }
});

describe("pyB64uDecode matches base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))", () => {
  const INVALID_LENGTH = (dataCharacters: number) =>
    `Invalid base64-encoded string: number of data characters (${dataCharacters}) cannot be 1 more than a multiple of 4`;
  const NOT_ASCII = "string argument should contain only ASCII characters";
  const cases: [input: string, expected: { hex: string } | { error: string }][] = [
    ["", { hex: "" }],
    ["QQ", { hex: "41" }],
    ["QUI", { hex: "4142" }],
    ["QUJD", { hex: "414243" }],
    ["QUJDRA", { hex: "41424344" }],
    ["QUJDREU", { hex: "4142434445" }],
    ["QQ==", { hex: "41" }],
    ["QQ=", { hex: "41" }],
    ["QR", { hex: "41" }],
    ["Q", { error: INVALID_LENGTH(1) }],
    ["QUJDR", { error: INVALID_LENGTH(5) }],
    ["Q===", { error: INVALID_LENGTH(1) }],
    ["Q!!!", { error: INVALID_LENGTH(1) }],
    ["QU JD Q", { error: INVALID_LENGTH(5) }],
    ["QQ=QQQ", { error: INVALID_LENGTH(5) }],
    ["QU=JD", { hex: "414243" }],
    ["QUJ=D", { hex: "4142" }],
    ["QU==JD", { hex: "41" }],
    ["QQ=x=", { hex: "410c" }],
    ["QQ==QQ", { hex: "41" }],
    ["QUI=QUI=", { hex: "4142" }],
    ["AAAA=AAAA", { hex: "000000000000" }],
    ["Q=Q=", { error: "Incorrect padding" }],
    ["Q=QQ", { error: "Incorrect padding" }],
    ["=QQ", { error: "Incorrect padding" }],
    ["Q!Q", { error: "Incorrect padding" }],
    ["Q Q", { error: "Incorrect padding" }],
    ["Q\nQ", { error: "Incorrect padding" }],
    ["Q.Q.", { error: "Incorrect padding" }],
    ["QUJ!", { error: "Incorrect padding" }],
    ["====", { hex: "" }],
    ["!!!!", { hex: "" }],
    ["QUJD\x00", { hex: "414243" }],
    ["+/+/", { hex: "fbffbf" }],
    ["-_-_", { hex: "fbffbf" }],
    ["+_-/", { hex: "fbffbf" }],
    ["\u00e9", { error: NOT_ASCII }],
    ["QQ\u00ff", { error: NOT_ASCII }],
    ["Q\x80", { error: NOT_ASCII }],
  ];
  for (const [input, expected] of cases) {
    test(JSON.stringify(input), () => {
      let actual: { hex: string } | { error: string };
      try {
        actual = { hex: pyB64uDecode(input).toString("hex") };
      } catch (error) {
        assert.ok(error instanceof Base64Error);
        actual = { error: error.message };
      }
      assert.deepEqual(actual, expected);
    });
  }
});

describe("timestamps", () => {
  const REGEX_CASES: [input: string, matches: boolean][] = [
    ["2024-01-01T00:00:00Z", true],
    ["2024-01-01T00:00:00.5Z", true],
    ["2024-01-01T00:00:00.123Z", true],
    ["2024-01-01T00:00:00.1234Z", false],
    ["2024-01-01T00:00:00Z\n", true],
    ["2024-01-01T00:00:00Z\n\n", false],
    ["2024-01-01T00:00:00Z\r\n", false],
    ["\n2024-01-01T00:00:00Z", false],
    ["2024-01-01t00:00:00Z", false],
    ["2024-01-01T00:00:00z", false],
    ["2024-01-01 00:00:00Z", false],
    ["2024-01-01T00:00:00+00:00", false],
    ["2024-01-01T00:00:00.Z", false],
    ["2024-1-01T00:00:00Z", false],
    ["\u0662\u0660\u0662\u0664-\u0660\u0661-\u0660\u0661T00:00:00Z", true],
    ["\uff12\uff10\uff12\uff14-01-01T00:00:00Z", true],
    ["2024-01-01T00:00:00.\u0665Z", true],
    ["2024-13-01T00:00:00Z", true],
  ];
  for (const [input, matches] of REGEX_CASES) {
    test(`validate_timestamp(${JSON.stringify(input)}) is ${matches}`, () => {
      assert.equal(isValidTimestamp(input), matches);
    });
  }

  test("non-strings are never valid timestamps", () => {
    for (const value of [null, 20240101, new PyFloat(1.5), ["2024-01-01T00:00:00Z"]]) {
      assert.equal(isValidTimestamp(value), false);
    }
  });

  const INSTANTS: [input: string, millis: number, isoformat: string][] = [
    ["2024-02-29T00:00:00Z", 1709164800000, "2024-02-29T00:00:00+00:00"],
    ["2000-02-29T12:34:56.789Z", 951827696789, "2000-02-29T12:34:56.789000+00:00"],
    ["1900-02-28T23:59:59Z", -2203891201000, "1900-02-28T23:59:59+00:00"],
    ["0001-01-01T00:00:00Z", -62135596800000, "0001-01-01T00:00:00+00:00"],
    ["9999-12-31T23:59:59.999Z", 253402300799999, "9999-12-31T23:59:59.999000+00:00"],
    ["1970-01-01T00:00:00.5Z", 500, "1970-01-01T00:00:00.500000+00:00"],
    ["1970-01-01T00:00:00.500Z", 500, "1970-01-01T00:00:00.500000+00:00"],
    ["2024-01-01T00:00:00.05Z", 1704067200050, "2024-01-01T00:00:00.050000+00:00"],
    ["1969-12-31T23:59:59.999Z", -1, "1969-12-31T23:59:59.999000+00:00"],
  ];
  for (const [input, millis, isoformat] of INSTANTS) {
    test(`${input} is ${millis} ms, printed ${isoformat}`, () => {
      assert.equal(timestampMillis(input), millis);
      assert.equal(pyIsoformat(millis), isoformat);
    });
  }

  // datetime.fromisoformat(ts.replace("Z", "+00:00")) in CPython 3.11: these texts reach the
  // error detail "revocations unusable: <exc>", so the wording matters.
  const CRASHES: [input: string, pythonMessage: string][] = [
    ["2024-13-01T00:00:00Z", "month must be in 1..12"],
    ["2024-00-01T00:00:00Z", "month must be in 1..12"],
    ["2023-02-29T00:00:00Z", "day is out of range for month"],
    ["1900-02-29T00:00:00Z", "day is out of range for month"],
    ["2024-01-00T00:00:00Z", "day is out of range for month"],
    ["2024-01-01T24:00:00Z", "hour must be in 0..23"],
    ["2024-01-01T23:60:00Z", "minute must be in 0..59"],
    ["2024-01-01T23:59:60Z", "second must be in 0..59"],
    ["0000-01-01T00:00:00Z", "year 0 is out of range"],
    ["2024-01-01T00:00:00Z\n", "Invalid isoformat string: '2024-01-01T00:00:00+00:00\\n'"],
    [
      "\u0662\u0660\u0662\u0664-01-01T00:00:00Z",
      "Invalid isoformat string: '\u0662\u0660\u0662\u0664-01-01T00:00:00+00:00'",
    ],
    ["2024-01-01T00:00:00.\u0665Z", "Invalid isoformat string: '2024-01-01T00:00:00.\u0665+00:00'"],
  ];
  for (const [input, pythonMessage] of CRASHES) {
    test(`fromisoformat(${JSON.stringify(input)}) raises "${pythonMessage}"`, () => {
      assert.throws(
        () => timestampMillis(input),
        (error: unknown) => {
          assert.ok(error instanceof TimestampCrash);
          assert.equal(error.message, pythonMessage);
          return true;
        },
      );
    });
  }
});
