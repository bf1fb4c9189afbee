/**
 * Adversarial sizes for the decoders one request reaches (docs/cost-bounds.md): each input
 * at the largest size a 1 MiB body can carry gets the answer the full decoding gives, and
 * the bounded decoders refuse past their bound. Nothing here is timed; bench/decoders.ts
 * measures what these inputs cost.
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { describe, test } from "node:test";
import { otsProof, sha256 } from "../../../bench/support/ots.js";
import { AnchorProofError, parseOtsProof } from "../../../src/verifier/anchor/ots.js";
import { pyB64uDecode } from "../../../src/verifier/crypto/base64.js";
import {
  base58Decode,
  base58Encode,
  DidKeyError,
  didKeyToPublicKey,
  ED25519_DID_KEY_DIGITS,
  MAX_BASE58_DIGITS,
  publicKeyToDidKey,
} from "../../../src/verifier/crypto/did-key.js";
import { canDecodeDidKey, verifyEd25519 } from "../../../src/verifier/crypto/ed25519.js";
import { parseJson, StrictJsonError } from "../../../src/verifier/json/parse.js";
import { PyFloat } from "../../../src/verifier/json/value.js";
import { isValidTimestamp } from "../../../src/verifier/timestamps.js";

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const MIB = 1024 * 1024;

/** The reference's reading, one big integer: the oracle for short texts only. */
function bigIntBase58(text: string): Buffer {
  let n = 0n;
  for (const ch of text) {
    const digit = ALPHABET.indexOf(ch);
    if (digit < 0) throw new DidKeyError("substring not found");
    n = n * 58n + BigInt(digit);
  }
  let hex = n === 0n ? "" : n.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  const ones = text.length - text.replace(/^1+/, "").length;
  return Buffer.concat([Buffer.alloc(ones), Buffer.from(hex, "hex")]);
}

function randomBase58(length: number): string {
  let text = "";
  for (let i = 0; i < length; i++) text += ALPHABET[randomInt(ALPHABET.length)];
  return text;
}

describe("did:key and base58", () => {
  const did = publicKeyToDidKey(Buffer.alloc(32, 7));

  test("every Ed25519 did:key has the same number of digits", () => {
    assert.equal(did.length, "did:key:z".length + ED25519_DID_KEY_DIGITS);
    for (const fill of [0x00, 0xff]) {
      const edge = publicKeyToDidKey(Buffer.alloc(32, fill));
      assert.equal(edge.length, "did:key:z".length + ED25519_DID_KEY_DIGITS);
      assert.deepEqual(didKeyToPublicKey(edge), Buffer.alloc(32, fill));
    }
  });

  test("base58 decodes as the big-integer reading does (random texts, leading 1s)", () => {
    for (let i = 0; i < 300; i++) {
      const text = "1".repeat(randomInt(4)) + randomBase58(randomInt(120));
      assert.deepEqual(base58Decode(text), bigIntBase58(text), text);
      const bytes = base58Decode(text);
      assert.equal(base58Encode(bytes), text);
    }
    assert.deepEqual(base58Decode(""), Buffer.alloc(0));
    assert.throws(() => base58Decode("abc0"), /substring not found/);
    assert.throws(() => base58Decode("ab\u{1F600}"), /substring not found/);
  });

  test("base58 refuses a text past its bound before decoding it", () => {
    assert.equal(base58Decode(randomBase58(MAX_BASE58_DIGITS)).length > 700, true);
    assert.throws(() => base58Decode("z".repeat(MAX_BASE58_DIGITS + 1)), DidKeyError);
  });

  test("a 1 MiB did:key is not a key: false, as its full decoding would give", () => {
    const bombs = [
      `did:key:z${"z".repeat(MIB)}`,
      `did:key:z${"1".repeat(MIB)}`,
      `did:key:z${"0".repeat(MIB)}`,
      `${did}${"z".repeat(MIB)}`,
      // One digit more or less than a key: the boundaries of the length check.
      `${did}z`,
      did.slice(0, -1),
      `did:key:z1${did.slice("did:key:z".length)}`,
    ];
    for (const bomb of bombs) {
      assert.throws(() => didKeyToPublicKey(bomb), DidKeyError);
      assert.equal(canDecodeDidKey(bomb), false);
      assert.equal(verifyEd25519(bomb, Buffer.from("m"), "A".repeat(86)), false);
    }
    // The short ones decode fully, and the reading agrees: none is 34 bytes of `ed 01` + key.
    for (const near of [`${did}z`, did.slice(0, -1)]) {
      const raw = bigIntBase58(near.slice("did:key:z".length));
      assert.equal(raw.length === 34 && raw[0] === 0xed && raw[1] === 0x01, false);
    }
  });
});

describe("other decoders at 1 MiB", () => {
  test("base64: a 1 MiB signature of junk decodes in one pass to what CPython gives", () => {
    const junk = "A!".repeat(MIB / 2);
    // Non-alphabet characters are skipped: MIB/2 data characters, a multiple of 4.
    assert.equal(pyB64uDecode(junk).length, (MIB / 2 / 4) * 3);
    assert.equal(
      verifyEd25519(publicKeyToDidKey(Buffer.alloc(32, 1)), Buffer.from("m"), junk),
      false,
    );
  });

  test("JSON: nesting and integer digits are refused at their bounds, whatever the size", () => {
    assert.throws(() => parseJson("[".repeat(MIB)), StrictJsonError);
    assert.throws(() => parseJson("9".repeat(MIB)), /Exceeds the limit \(4300 digits\)/);
    assert.throws(() => parseJson(`[${"9".repeat(4300)},`.repeat(200)), StrictJsonError);
    // A 1 MiB float is read by the platform's strtod, in one pass.
    assert.deepEqual(parseJson(`0.${"1".repeat(MIB)}`), new PyFloat(0.1111111111111111));
  });

  test("timestamps: a 1 MiB string is refused by the anchored pattern", () => {
    assert.equal(isValidTimestamp(`2026-01-01T00:00:00Z${"9".repeat(MIB)}`), false);
    assert.equal(isValidTimestamp(`${"9".repeat(MIB)}-01-01T00:00:00Z`), false);
    assert.equal(isValidTimestamp("2026-01-01T00:00:00Z"), true);
  });

  test("OTS: 9,999 leaves are read, one node past 10,000 is refused", () => {
    const leaves = (count: number) =>
      Array.from({ length: count }, (_, i) => `https://c${i}.example`);
    assert.equal(
      parseOtsProof(otsProof(sha256("bound"), { calendars: leaves(9_999) })).leaves.length,
      9_999,
    );
    assert.throws(
      () => parseOtsProof(otsProof(sha256("bound"), { calendars: leaves(10_001) })),
      (error: unknown) => error instanceof AnchorProofError && error.code === "too_many_nodes",
    );
  });
});
