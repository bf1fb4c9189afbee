/**
 * The signed bytes `parseSigned` splices from the input must be exactly `canonicalBytes(record,
 * "sig")` on every input it splices; and it must splice the usual spellings (pretty-printed,
 * unsorted, canonical, with escapes), or it saves nothing. Differential: every object it
 * spliced is encoded the old way and compared; where it gives up, the encoder must refuse.
 *
 * The generated run is seed-fixed: 1,000 trees (7,000 documents) in the unit lane's sample, and
 * 15,000 trees (105,000 documents) at full depth (RECEIPTD_TEST_DEPTH=full, test/support/depth.ts);
 * `JSON_SPLICE_DOCUMENTS=<trees>` overrides either.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  CanonicalizationError,
  canonicalBytes,
  canonicalText,
  compareCodePoints,
} from "../../../src/verifier/json/canonical.js";
import { dumpJson } from "../../../src/verifier/json/dump.js";
import { parseJson, parseSigned, StrictJsonError } from "../../../src/verifier/json/parse.js";
import type { SignedSources } from "../../../src/verifier/json/signed-sources.js";
import { isObject, type JsonObject, type JsonValue } from "../../../src/verifier/json/value.js";
import { CORPUS_DIR } from "../../support/corpus.js";
import { FULL_DEPTH } from "../../support/depth.js";

function objectsOf(value: JsonValue, found: JsonObject[] = []): JsonObject[] {
  if (Array.isArray(value)) for (const item of value) objectsOf(item, found);
  else if (isObject(value)) {
    found.push(value);
    for (const item of value.values()) objectsOf(item, found);
  }
  return found;
}

/** The encoder's bytes, or null where it refuses (a float, a lone surrogate). */
function encoded(object: JsonObject): Buffer | null {
  try {
    return canonicalBytes(object, "sig");
  } catch (error) {
    if (error instanceof CanonicalizationError) return null;
    throw error;
  }
}

/**
 * Compares every spliced object with the encoder, and checks that the splice gives up only
 * where the encoder refuses; returns how many objects were spliced.
 */
function assertSameBytes(value: JsonValue, sources: SignedSources, input: string): number {
  let copied = 0;
  let recorded = 0;
  const objects = objectsOf(value);
  for (const object of objects) {
    const fast = sources.unsignedBytes(object);
    const expected = encoded(object);
    if (fast === null) {
      // Not recorded (neither the document nor an array element), or refused by both.
      if (expected !== null) {
        assert.ok(
          object !== value && !isElement(value, object),
          `gave up on an encodable record in ${input}`,
        );
      } else if (object === value || isElement(value, object)) recorded++;
      continue;
    }
    copied++;
    recorded++;
    assert.ok(expected !== null, `spliced what the encoder refuses in ${input}`);
    assert.equal(
      fast.toString("hex"),
      expected.toString("hex"),
      `different signed bytes for ${input}`,
    );
  }
  assert.equal(sources.size, recorded, "the document and every array element are recorded");
  return copied;
}

/** Whether `object` is an element of some array in `value`. */
function isElement(value: JsonValue, object: JsonObject): boolean {
  if (Array.isArray(value)) {
    return value.some((item) => item === object || isElement(item, object));
  }
  if (isObject(value)) for (const item of value.values()) if (isElement(item, object)) return true;
  return false;
}

/** Parses `input` both ways; null when it is refused (both must refuse it alike). */
function check(input: Uint8Array | string, universalNewlines = false): number | null {
  let plain: JsonValue;
  try {
    plain = parseJson(input, { universalNewlines });
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    assert.throws(() => parseSigned(input, { universalNewlines }), {
      name: "StrictJsonError",
      message: error.message,
    });
    return null;
  }
  const { value, sources } = parseSigned(input, { universalNewlines });
  assert.deepEqual(value, plain);
  return assertSameBytes(value, sources, String(input).slice(0, 200));
}

const vectorsDir = join(CORPUS_DIR, "vectors");
const vectors = readdirSync(vectorsDir)
  .filter((name) => /^\d.*\.json$/.test(name))
  .map((name) => ({ name, bytes: readFileSync(join(vectorsDir, name)) }));

/** A small deterministic PRNG (mulberry32), so failures reproduce. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A value as tokens, so that one value can be spelled in many ways. */
type Node =
  | { kind: "leaf"; canonical: string; variants: string[] }
  | { kind: "array"; items: Node[] }
  | { kind: "object"; members: { key: string; value: Node }[] };

const KEYS = ["sig", "a", "b", "body", "é", "\u{1F600}", "\uffff", "\ue000", "\ud7ff", "0", "10"];
const KEYS_MORE = [
  "",
  "__proto__",
  "A",
  "aa",
  "z",
  "\u2028",
  "k/",
  // Astral characters sort above U+E000–U+FFFF by code point, below them by UTF-16 unit.
  "\u{10000}",
  "\u{1F600}a",
  "a\u{1F600}",
  'q"k',
  "back\\k",
  "tab\tk",
  "\u0001",
  // A lone surrogate: the encoder refuses it, so the splice must give up.
  "\ud800",
  "x\udfff",
];
const INTEGERS: [string, string[]][] = [
  ["0", ["-0"]],
  ["1", ["1.0", "1e0", "1E+0"]],
  ["100", ["1e2", "100.0", "1E2"]],
  ["-7", ["-7.0", "-7e0"]],
  ["12345678901234567890", ["12345678901234567890.0"]],
  ["-9007199254740993", ["-9007199254740993e0"]],
  ["9007199254740991", ["9007199254740991.0"]],
  ["123456789012345", []],
];
const STRINGS = [
  "",
  "\u{10FFFF}\u{1F600}",
  "crlf\r\n",
  "\u00e9\u0000",
  "plain",
  "é ü",
  "\u{1F600}x",
  "a/b",
  'q"uote',
  "back\\slash",
  "tab\t",
  "\u0001",
  "\u2028",
  "\u007f",
];

/** JSON's two-character escapes, which a producer may use where canonical encoding does too. */
const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "/": "\\/",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

/**
 * Escaped spellings of a string: every character as `\uXXXX` (lowercase hex, and uppercase);
 * `/` as `\/`; and a mixed one: the first character escaped (short form where JSON has one,
 * `\uXXXX` else), the rest as `JSON.stringify` writes it, so escapes sit next to raw
 * non-ASCII and astral text within one token.
 */
function escapedVariants(value: string): string[] {
  const mixed = mixedEscape(value);
  return [...uEscapedVariants(value), ...(mixed === null ? [] : [mixed])];
}

function mixedEscape(value: string): string | null {
  const first = [...value][0];
  if (first === undefined) return null;
  const code = first.codePointAt(0)!;
  const head =
    SHORT_ESCAPES[first] ??
    (code > 0xffff
      ? `\\u${(Math.floor((code - 0x10000) / 0x400) + 0xd800).toString(16)}\\u${(((code - 0x10000) % 0x400) + 0xdc00).toString(16)}`
      : `\\u${code.toString(16).padStart(4, "0")}`);
  return `"${head}${JSON.stringify(value.slice(first.length)).slice(1, -1)}"`;
}

function uEscapedVariants(value: string): string[] {
  const all = [...value]
    .map((ch) => {
      const code = ch.codePointAt(0)!;
      if (code > 0xffff) {
        const high = Math.floor((code - 0x10000) / 0x400) + 0xd800;
        const low = ((code - 0x10000) % 0x400) + 0xdc00;
        return `\\u${high.toString(16)}\\u${low.toString(16)}`;
      }
      return `\\u${code.toString(16).padStart(4, "0")}`;
    })
    .join("");
  const variants = [
    `"${all}"`,
    `"${all.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) => `\\u${hex.toUpperCase()}`)}"`,
  ];
  if (value.includes("/")) variants.push(JSON.stringify(value).replace("/", "\\/"));
  return variants;
}

function leafNode(random: () => number): Node {
  const pick = random();
  if (pick < 0.35) {
    const [canonical, variants] = INTEGERS[Math.floor(random() * INTEGERS.length)]!;
    return { kind: "leaf", canonical, variants };
  }
  if (pick < 0.75) {
    const value = STRINGS[Math.floor(random() * STRINGS.length)]!;
    return { kind: "leaf", canonical: JSON.stringify(value), variants: escapedVariants(value) };
  }
  if (pick < 0.85) return { kind: "leaf", canonical: "true", variants: [] };
  if (pick < 0.92) return { kind: "leaf", canonical: "null", variants: [] };
  // Values canonical encoding refuses: the fast path must never take them.
  const refused = ["1.5", "NaN", "-Infinity", '"\\ud800"', '"x\\udc00"'];
  return { kind: "leaf", canonical: refused[Math.floor(random() * refused.length)]!, variants: [] };
}

function node(random: () => number, depth: number): Node {
  const pick = random();
  if (depth > 3 || pick < 0.3) return leafNode(random);
  if (pick < 0.45) {
    const items = Array.from({ length: Math.floor(random() * 4) }, () => node(random, depth + 1));
    return { kind: "array", items };
  }
  const pool = random() < 0.8 ? KEYS : [...KEYS, ...KEYS_MORE];
  const keys = new Set<string>();
  const size = Math.floor(random() * 6);
  while (keys.size < size) keys.add(pool[Math.floor(random() * pool.length)]!);
  if (random() < 0.7) keys.add("sig");
  return {
    kind: "object",
    members: [...keys].map((key) => ({ key, value: node(random, depth + 1) })),
  };
}

interface Spelling {
  /** Chance of whitespace at each place it is allowed. */
  space: number;
  /** Chance of a non-canonical spelling of each leaf and key. */
  variant: number;
  /** Chance of an object keeping its members unsorted. */
  unsorted: number;
  /** Chance of an object repeating one of its members. */
  duplicate: number;
}

function spell(tree: Node, s: Spelling, random: () => number): string {
  const ws = () =>
    random() < s.space ? [" ", "\n", "\t", "\r\n", "  "][Math.floor(random() * 5)]! : "";
  const leaf = (canonical: string, variants: string[]) =>
    variants.length > 0 && random() < s.variant
      ? variants[Math.floor(random() * variants.length)]!
      : canonical;
  if (tree.kind === "leaf") return leaf(tree.canonical, tree.variants);
  if (tree.kind === "array") {
    return `[${ws()}${tree.items.map((item) => spell(item, s, random)).join(`${ws()},${ws()}`)}${ws()}]`;
  }
  const members = [...tree.members];
  if (random() >= s.unsorted) {
    members.sort((x, y) => {
      const [a, b] = [[...x.key], [...y.key]];
      for (let i = 0; i < Math.min(a.length, b.length); i++) {
        const d = a[i]!.codePointAt(0)! - b[i]!.codePointAt(0)!;
        if (d !== 0) return d;
      }
      return a.length - b.length;
    });
  }
  if (members.length > 0 && random() < s.duplicate) members.push(members[0]!);
  const text = members.map(
    ({ key, value }) =>
      `${leaf(JSON.stringify(key), escapedVariants(key))}${ws()}:${ws()}${spell(value, s, random)}`,
  );
  return `{${ws()}${text.join(`${ws()},${ws()}`)}${ws()}}`;
}

describe("signed bytes from the input (parseSigned)", () => {
  /** The value with every object's members in code-point order. */
  function sortedValue(value: JsonValue): JsonValue {
    if (Array.isArray(value)) return value.map(sortedValue);
    if (!isObject(value)) return value;
    const keys = [...value.keys()].sort(compareCodePoints);
    return new Map(keys.map((key) => [key, sortedValue(value.get(key)!)]));
  }

  const forms = {
    "as given (pretty-printed, members unsorted)": (given: Buffer) => given,
    "in canonical form": (given: Buffer) => Buffer.from(canonicalText(parseJson(given)), "utf8"),
    "sorted and pretty-printed": (given: Buffer) =>
      Buffer.from(dumpJson(sortedValue(parseJson(given)), { indent: 2, ensureAscii: false })),
  };
  for (const [form, spell] of Object.entries(forms)) {
    test(`corpus vectors ${form}: every receipt is spliced, with the encoder's bytes`, () => {
      let receipts = 0;
      for (const { name, bytes: given } of vectors) {
        const bytes = spell(given);
        const { value, sources } = parseSigned(bytes);
        const list = isObject(value) ? value.get("receipts") : undefined;
        assert.ok(Array.isArray(list), name);
        for (const receipt of list) {
          if (!isObject(receipt) || !receipt.has("sig")) continue;
          assert.notEqual(sources.unsignedBytes(receipt), null, name);
          receipts++;
        }
        assertSameBytes(value, sources, name);
        assert.notEqual(check(bytes), null);
      }
      assert.ok(receipts >= 390, `only ${receipts} receipts`);
    });
  }

  test("canonical receipts inside a pretty-printed bundle with CRLF and non-ASCII text", () => {
    for (const { bytes } of vectors.slice(0, 20)) {
      const bundle = parseJson(bytes);
      assert.ok(isObject(bundle));
      const receipts = bundle.get("receipts") as JsonValue[];
      const text = `{\r\n "note": "héllo \u{1F600}",\r\n "receipts": [\r\n  ${receipts
        .map((r) => canonicalText(r))
        .join(",\r\n  ")}\r\n ]\r\n}`;
      for (const newlines of [false, true]) {
        // The receipts, the bundle itself, and objects in arrays inside receipts.
        assert.ok(check(Buffer.from(text, "utf8"), newlines)! >= receipts.length + 1);
        assert.ok(check(text, newlines)! >= receipts.length + 1);
      }
    }
  });

  test("the JSON differential corpus, each case wrapped in a signed object", () => {
    const cases = JSON.parse(
      readFileSync(new URL("../../../corpus/json/differential.json", import.meta.url), "utf8"),
    ) as { input_b64: string }[];
    let parsed = 0;
    for (const { input_b64 } of cases) {
      const input = Buffer.from(input_b64, "base64");
      for (const wrapped of [
        Buffer.concat([Buffer.from('{"sig":0,"v":'), input, Buffer.from("}")]),
        Buffer.concat([Buffer.from('{"a":'), input, Buffer.from(',"sig":{"sig":[]}}')]),
        input,
      ]) {
        if (check(wrapped) !== null) parsed++;
      }
    }
    assert.ok(parsed > 300, `only ${parsed} inputs parsed`);
  });

  const trees = Number(process.env.JSON_SPLICE_DOCUMENTS ?? (FULL_DEPTH ? 15_000 : 1000));
  test(`${trees * 7} generated documents in canonical and mutated spellings: 0 differences`, () => {
    const random = prng(20261126);
    const spellings: Spelling[] = [
      { space: 0, variant: 0, unsorted: 0, duplicate: 0 },
      { space: 0.05, variant: 0, unsorted: 0, duplicate: 0 },
      { space: 0, variant: 0.1, unsorted: 0, duplicate: 0 },
      { space: 0, variant: 0, unsorted: 0.3, duplicate: 0 },
      { space: 0, variant: 0, unsorted: 0, duplicate: 0.1 },
      { space: 0.02, variant: 0.05, unsorted: 0.1, duplicate: 0.02 },
      // How producers write: insertion order, pretty-printed, some escapes.
      { space: 0.6, variant: 0.2, unsorted: 1, duplicate: 0 },
    ];
    let inputs = 0;
    let refused = 0;
    let spliced = 0;
    for (let i = 0; i < trees; i++) {
      const tree = node(random, 0);
      for (const spelling of spellings) {
        const text = spell(tree, spelling, random);
        const count = check(Buffer.from(text, "utf8"));
        inputs++;
        if (count === null) refused++;
        else spliced += count;
      }
    }
    assert.equal(inputs, trees * spellings.length);
    assert.ok(refused < inputs / 4, `${refused} of ${inputs} documents refused by the parser`);
    assert.ok(spliced > inputs / 2, `the splice was taken only ${spliced} times`);
  });

  test("a deeply nested canonical record is recorded at every level", () => {
    let text = '{"sig":1}';
    for (let i = 0; i < 200; i++) text = `{"a":[${text}],"sig":"${i}"}`;
    assert.equal(check(text), 201);
  });

  test("the top-level sig member and whitespace are removed", () => {
    for (const [input, expected] of [
      ['{"sig":1}', "{}"],
      ['{ "sig" : 1 }', "{}"],
      ['{"sig":1,"z":2}', '{"z":2}'],
      ['{"a":1,"sig":{"b":[1,2],"sig":3}}', '{"a":1}'],
      [
        '{"a":1,"sig":2,"t":3,"x":{"b":[ 1 , {"c":2,"d":1} ],"sig":4}}',
        '{"a":1,"t":3,"x":{"b":[1,{"c":2,"d":1}],"sig":4}}',
      ],
      ['{\n  "a": "é",\r\n\t"sig": "\u{1F600}",\n  "t": "ü"\n}', '{"a":"é","t":"ü"}'],
      [
        '{"sig":1,"\ue000":1,"\uffff":4,"\u{10000}":3,"\u{1F600}":2}',
        '{"\ue000":1,"\uffff":4,"\u{10000}":3,"\u{1F600}":2}',
      ],
      [
        '{"a":-9007199254740993,"b":12345678901234567890,"c":[true,false,null,0,-1],"sig":1}',
        '{"a":-9007199254740993,"b":12345678901234567890,"c":[true,false,null,0,-1]}',
      ],
      ['{"":3,"a":2,"ab":1,"sig":1}', '{"":3,"a":2,"ab":1}'],
    ] as const) {
      const { value, sources } = parseSigned(Buffer.from(input, "utf8"));
      assert.ok(isObject(value));
      assert.equal(sources.unsignedBytes(value)?.toString("utf8"), expected, input);
      assert.equal(canonicalBytes(value, "sig").toString("utf8"), expected, input);
    }
  });

  test("spellings canonical encoding changes are written as the encoder writes them", () => {
    for (const [input, expected] of [
      ['{"a":-0,"sig":1}', '{"a":0}'],
      ['{"a":[ -0 ],"sig":1}', '{"a":[0]}'],
      ['{"a":"\\u0041","sig":1}', '{"a":"A"}'],
      ['{"a":"\\/","sig":1}', '{"a":"/"}'],
      ['{"a":"\\n\\u001f\\u00e9","sig":1}', '{"a":"\\n\\u001f\u00e9"}'],
      ['{"\\u0061":1,"sig":1,"\\u0073ig":2}', null],
      ['{"\\u0073ig":1,"b":[ "\\ud83d\\ude00" ]}', '{"b":["\u{1F600}"]}'],
      // Members out of order, at the top or inside.
      ['{"z":2,"sig":1}', '{"z":2}'],
      ['{"sig":1,"ab":1,"a":2}', '{"a":2,"ab":1}'],
      ['{"a":{"d":1,"c":2},"sig":1}', '{"a":{"c":2,"d":1}}'],
      // Code-point order, not code-unit order (U+1F600 is D83D DE00 in UTF-16), raw and escaped.
      ['{"sig":1,"\u{1F600}":2,"\ue000":1}', '{"\ue000":1,"\u{1F600}":2}'],
      ['{"\\ud83d\\ude00":2,"\\ue000":1}', '{"\ue000":1,"\u{1F600}":2}'],
    ] as const) {
      let parsed: ReturnType<typeof parseSigned>;
      try {
        parsed = parseSigned(Buffer.from(input, "utf8"));
      } catch (error) {
        // A duplicate name once unescaped: refused by the parser, as Python refuses it.
        assert.equal(expected, null, input);
        assert.ok(error instanceof StrictJsonError);
        continue;
      }
      const { value, sources } = parsed;
      assert.ok(isObject(value));
      assert.equal(sources.unsignedBytes(value)?.toString("utf8"), expected, input);
      assert.equal(canonicalBytes(value, "sig").toString("utf8"), expected, input);
    }
  });

  test("what canonical encoding refuses is left to the encoder", () => {
    for (const input of [
      '{"a":1.0,"sig":1}',
      '{"a":1e2,"sig":1}',
      '{"a":NaN,"sig":1}',
      '{"a":[Infinity],"sig":1}',
      '{"a":{"b":-Infinity},"sig":1}',
      '{"a":{"x":["\\ud800"]},"sig":1}',
      '{"\\udc00":1}',
      '{"a":{"\\ud83d":1}}',
    ]) {
      const { value, sources } = parseSigned(Buffer.from(input, "utf8"));
      assert.ok(isObject(value));
      assert.equal(sources.unsignedBytes(value), null, input);
      assert.throws(() => canonicalBytes(value, "sig"), CanonicalizationError, input);
    }
  });
});
