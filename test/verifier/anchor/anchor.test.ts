import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { main } from "../../../src/cli/continuity-receipt-anchor.js";
import {
  AnchorProofError,
  type AnchorProofErrorCode,
  type AnchorResult,
  applyOperation,
  parseOtsProof,
  verifyProof,
} from "../../../src/verifier/anchor/index.js";
import { recordDigest } from "../../../src/verifier/crypto/digest.js";
import { fromPlain } from "../../../src/verifier/json/value.js";

const corpus = new URL("../../../../shared/corpus/vectors/anchor/", import.meta.url);
const fixture = (name: string): Buffer => readFileSync(new URL(name, corpus));
const fixturePath = (name: string): string => new URL(name, corpus).pathname;

const helloProof = fixture("hello-world.txt.ots");
const helloDigest = createHash("sha256").update(fixture("hello-world.txt")).digest();
const fixtureHeaders = JSON.parse(fixture("headers.json").toString("utf8")) as {
  headers: Record<string, string>;
};
const HELLO_HEIGHT = 358391;
const helloHeaderHex = fixtureHeaders.headers[String(HELLO_HEIGHT)]!;

// ---- proof builder -------------------------------------------------------------------------

const MAGIC = Buffer.from("004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294", "hex");
const BITCOIN = "0588960d73d71901";
const LITECOIN = "06869a0d73d71b45";
const PENDING = "83dfe30d2ef90c8e";
const OP = {
  sha1: 0x02,
  ripemd160: 0x03,
  sha256: 0x08,
  keccak256: 0x67,
  append: 0xf0,
  prepend: 0xf1,
  reverse: 0xf2,
  hexlify: 0xf3,
} as const;

function hash(algorithm: string, data: Uint8Array): Buffer {
  return createHash(algorithm).update(data).digest();
}

function varuint(value: number): Buffer {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return Buffer.from(out);
}

function varbytes(bytes: Uint8Array): Buffer {
  return Buffer.concat([varuint(bytes.length), bytes]);
}

function bytes(...parts: (Uint8Array | number)[]): Buffer {
  return Buffer.concat(parts.map((part) => (typeof part === "number" ? Buffer.of(part) : part)));
}

function attestation(tagHex: string, payload: Uint8Array): Buffer {
  return bytes(0x00, Buffer.from(tagHex, "hex"), varbytes(payload));
}

const bitcoinLeaf = (height: number): Buffer => attestation(BITCOIN, varuint(height));
const litecoinLeaf = (height: number): Buffer => attestation(LITECOIN, varuint(height));
const pendingLeaf = (uri: string | Uint8Array): Buffer =>
  attestation(PENDING, varbytes(typeof uri === "string" ? Buffer.from(uri, "utf8") : uri));
const unknownLeaf = (payload: Uint8Array = Buffer.alloc(0)): Buffer =>
  attestation("0102030405060708", payload);

/** A timestamp with several branches: every branch but the last is announced by 0xff. */
function fork(...branches: Buffer[]): Buffer {
  return bytes(
    ...branches.flatMap((branch, i) => (i < branches.length - 1 ? [0xff, branch] : [branch])),
  );
}

const append = (arg: Uint8Array): Buffer => bytes(OP.append, varbytes(arg));
const prepend = (arg: Uint8Array): Buffer => bytes(OP.prepend, varbytes(arg));

interface ProofOptions {
  version?: number;
  fileHashTag?: number;
}

const sampleDigest = hash("sha256", Buffer.from("receiptd anchor test"));

function buildProof(
  tree: Uint8Array,
  digest: Uint8Array = sampleDigest,
  options: ProofOptions = {},
): Buffer {
  return bytes(MAGIC, options.version ?? 1, options.fileHashTag ?? OP.sha256, digest, tree);
}

/** An 80-byte header whose merkle root field holds `merkleRoot`. */
function headerWith(merkleRoot: Uint8Array, time = 1_700_000_000): Buffer {
  const header = Buffer.alloc(80, 0x11);
  Buffer.from(merkleRoot).copy(header, 36);
  header.writeUInt32LE(time, 68);
  return header;
}

function parseError(proof: Uint8Array): AnchorProofError {
  try {
    parseOtsProof(proof);
  } catch (error) {
    if (error instanceof AnchorProofError) return error;
    throw error;
  }
  assert.fail("proof parsed but an AnchorProofError was expected");
}

function assertRejected(proof: Uint8Array, code: AnchorProofErrorCode, detail?: string): void {
  const error = parseError(proof);
  assert.equal(error.code, code, error.detail);
  if (detail !== undefined) assert.equal(error.detail, detail);
  const result = verifyProof(proof, sampleDigest);
  assert.deepEqual(
    { status: result.status, code: result.code, file_digest: result.file_digest },
    { status: "invalid", code, file_digest: "" },
  );
  assert.deepEqual(result.attestations, []);
}

function statusOf(result: AnchorResult): [string, string] {
  return [result.status, result.code];
}

// ---- fixtures -------------------------------------------------------------------------------

describe("real OpenTimestamps fixtures", () => {
  const helloHeaders = new Map([[HELLO_HEIGHT, helloHeaderHex]]);

  test("hello-world.txt.ots verifies against block 358391", () => {
    const result = verifyProof(helloProof, helloDigest, helloHeaders);
    assert.deepEqual(statusOf(result), ["verified", "anchor_verified"]);
    assert.equal(result.file_digest, `sha256:${helloDigest.toString("hex")}`);
    assert.deepEqual(result.confirmed, {
      block_height: HELLO_HEIGHT,
      merkle_root: "007ee445d23ad061af4a36b809501fab1ac4f2d7e7a739817dd0cbb7ec661b8a",
      header_time: 1432827678,
    });
    assert.deepEqual(result.attestations, [{ kind: "bitcoin", value: HELLO_HEIGHT }]);
    assert.match(result.detail, /only merkle-root equality/);
    assert.match(result.detail, /no proof-of-work/);
    assert.deepEqual(Object.keys(result), [
      "status",
      "code",
      "detail",
      "file_digest",
      "attestations",
      "confirmed",
    ]);
  });

  test("every accepted digest spelling and a raw-byte header verify", () => {
    const digestHex = helloDigest.toString("hex");
    const rawHeaders = new Map([[HELLO_HEIGHT, Buffer.from(helloHeaderHex, "hex")]]);
    for (const expected of [
      helloDigest,
      digestHex,
      digestHex.toUpperCase(),
      `sha256:${digestHex}`,
      `0x${digestHex}`,
      `  \t sha256:${digestHex}\n`,
      // Surrounding whitespace is what Python's str.strip() removes, including \x1c and U+3000.
      `\x1c\u3000${digestHex}\u00a0`,
    ]) {
      assert.equal(verifyProof(helloProof, expected, rawHeaders).code, "anchor_verified");
    }
  });

  test("without headers the bitcoin attestation stays unverified", () => {
    const result = verifyProof(helloProof, helloDigest);
    assert.deepEqual(statusOf(result), ["unverified", "anchor_unverified"]);
    assert.equal(result.file_digest, `sha256:${helloDigest.toString("hex")}`);
    assert.equal("confirmed" in result, false);
  });

  test("a header with a different merkle root is a header_mismatch", () => {
    const wrong = Buffer.from(helloHeaderHex, "hex");
    wrong[40]! ^= 0x01;
    const result = verifyProof(helloProof, helloDigest, new Map([[HELLO_HEIGHT, wrong]]));
    assert.deepEqual(statusOf(result), ["mismatch", "header_mismatch"]);
    assert.match(result.detail, /only merkle-root equality/);
    assert.equal("confirmed" in result, false);
  });

  test("a header supplied only at another height is a header_mismatch", () => {
    const result = verifyProof(helloProof, helloDigest, new Map([[0, helloHeaderHex]]));
    assert.deepEqual(statusOf(result), ["mismatch", "header_mismatch"]);
  });

  test("a wrong expected digest is a digest_mismatch that still reports the proof", () => {
    const wrong = Buffer.from(helloDigest);
    wrong[0]! ^= 0xff;
    const result = verifyProof(helloProof, wrong, helloHeaders);
    assert.deepEqual(statusOf(result), ["mismatch", "digest_mismatch"]);
    assert.equal(result.file_digest, `sha256:${helloDigest.toString("hex")}`);
    assert.deepEqual(statusOf(verifyProof(helloProof, helloDigest.subarray(0, 20), helloHeaders)), [
      "mismatch",
      "digest_mismatch",
    ]);
  });

  test("unusable digest strings are bad_digest", () => {
    const digestHex = helloDigest.toString("hex");
    for (const expected of [
      "",
      "   ",
      "sha256:",
      "0x",
      "not hex",
      digestHex.slice(1),
      `sha1:${digestHex}`,
      `SHA256:${digestHex}`,
      `sha256: ${digestHex}`,
      `${digestHex.slice(0, 10)} ${digestHex.slice(10)}`,
      `\ufeff${digestHex}`,
    ]) {
      const result = verifyProof(helloProof, expected, helloHeaders);
      assert.deepEqual(statusOf(result), ["invalid", "bad_digest"], JSON.stringify(expected));
      assert.equal(result.file_digest, "");
    }
  });

  test("headers that are not 80 bytes of hex are bad_header", () => {
    for (const header of [
      helloHeaderHex.slice(0, 158),
      Buffer.alloc(79),
      Buffer.alloc(81),
      `${helloHeaderHex.slice(0, 158)}zz`,
    ]) {
      const result = verifyProof(helloProof, helloDigest, new Map([[HELLO_HEIGHT, header]]));
      assert.deepEqual(statusOf(result), ["invalid", "bad_header"]);
      assert.deepEqual(result.attestations, [{ kind: "bitcoin", value: HELLO_HEIGHT }]);
    }
  });

  test("a digest mismatch is reported before a bad header", () => {
    const result = verifyProof(helloProof, Buffer.alloc(32), new Map([[1, Buffer.alloc(79)]]));
    assert.equal(result.code, "digest_mismatch");
  });

  test("known-and-unknown-notary.txt.ots is pending and lists both attestations", () => {
    const proof = fixture("known-and-unknown-notary.txt.ots");
    const { fileDigest } = parseOtsProof(proof);
    const result = verifyProof(proof, fileDigest);
    assert.deepEqual(statusOf(result), ["unverified", "anchor_pending"]);
    assert.equal(result.attestations.length, 2);
    assert.deepEqual(result.attestations[0], {
      kind: "pending",
      value: "https://bob.btc.calendar.opentimestamps.org",
    });
    assert.deepEqual(result.attestations[1], {
      kind: "unknown",
      tag: "0102030405060708",
      payload: Buffer.from("x".repeat(46)).toString("hex"),
    });
  });

  test("every proper prefix of hello-world.txt.ots is truncated", () => {
    for (let length = 0; length < helloProof.length; length++) {
      assert.equal(parseError(helloProof.subarray(0, length)).code, "truncated", `at ${length}`);
    }
  });
});

// ---- operations and tree shape ----------------------------------------------------------------

describe("operation replay", () => {
  test("append, prepend, reverse, hexlify and hashes produce the committed message", () => {
    const tree = bytes(
      append(Buffer.from("A")),
      prepend(Buffer.from("BC")),
      OP.reverse,
      OP.hexlify,
      OP.sha1,
      OP.ripemd160,
      OP.sha256,
      bitcoinLeaf(7),
    );
    const reversed = Buffer.from([
      ...Buffer.concat([Buffer.from("BC"), sampleDigest, Buffer.from("A")]),
    ]).reverse();
    const hexlified = Buffer.from(reversed.toString("hex"), "ascii");
    const expected = hash("sha256", hash("ripemd160", hash("sha1", hexlified)));
    const [leaf] = parseOtsProof(buildProof(tree)).leaves;
    assert.deepEqual(Buffer.from(leaf!.message), expected);
  });

  test("sha1 file-hash proofs parse and verify", () => {
    const digest = hash("sha1", Buffer.from("sha1 document"));
    const proof = buildProof(bytes(OP.sha256, bitcoinLeaf(465751)), digest, {
      fileHashTag: OP.sha1,
    });
    const headers = new Map([[465751, headerWith(hash("sha256", digest), 1_500_000_000)]]);
    const result = verifyProof(proof, digest.toString("hex"), headers);
    assert.deepEqual(statusOf(result), ["verified", "anchor_verified"]);
    assert.equal(result.file_digest, `sha1:${digest.toString("hex")}`);
    assert.equal(result.confirmed?.header_time, 1_500_000_000);
  });

  test("ripemd160 file-hash proofs parse and verify", () => {
    const digest = hash("ripemd160", Buffer.from("ripemd160 document"));
    const proof = buildProof(bytes(OP.ripemd160, OP.sha256, bitcoinLeaf(1)), digest, {
      fileHashTag: OP.ripemd160,
    });
    const merkleRoot = hash("sha256", hash("ripemd160", digest));
    const result = verifyProof(proof, digest, new Map([[1, headerWith(merkleRoot)]]));
    assert.deepEqual(statusOf(result), ["verified", "anchor_verified"]);
    assert.equal(result.file_digest, `ripemd160:${digest.toString("hex")}`);
    assert.equal(result.confirmed?.merkle_root, merkleRoot.toString("hex"));
  });

  test("fork branches are reported in wire order with their own messages", () => {
    const tree = fork(
      bytes(append(Buffer.from("a")), bitcoinLeaf(10)),
      pendingLeaf("https://calendar.example"),
      bytes(prepend(Buffer.from("b")), fork(unknownLeaf(Buffer.from("u")), litecoinLeaf(5))),
    );
    const proof = buildProof(tree);
    const { leaves } = parseOtsProof(proof);
    assert.deepEqual(
      leaves.map((leaf) => leaf.attestation),
      [
        { kind: "bitcoin", value: 10 },
        { kind: "pending", value: "https://calendar.example" },
        { kind: "unknown", tag: "0102030405060708", payload: "75" },
        { kind: "litecoin", value: 5 },
      ],
    );
    const withA = Buffer.concat([sampleDigest, Buffer.from("a")]);
    const withB = Buffer.concat([Buffer.from("b"), sampleDigest]);
    assert.deepEqual(
      leaves.map((leaf) => Buffer.from(leaf.message).toString("hex")),
      [withA, sampleDigest, withB, withB].map((message) => message.toString("hex")),
    );
    // Without headers a bitcoin attestation is still reported ahead of a pending one.
    assert.deepEqual(statusOf(verifyProof(proof, sampleDigest)), [
      "unverified",
      "anchor_unverified",
    ]);
  });

  test("the first bitcoin leaf whose header matches confirms the proof", () => {
    const tree = fork(bytes(OP.reverse, bitcoinLeaf(1)), bytes(OP.sha256, bitcoinLeaf(2)));
    const headers = new Map([
      [1, headerWith(Buffer.alloc(32))],
      [2, headerWith(hash("sha256", sampleDigest))],
    ]);
    const result = verifyProof(buildProof(tree), sampleDigest, headers);
    assert.deepEqual(statusOf(result), ["verified", "anchor_verified"]);
    assert.equal(result.confirmed?.block_height, 2);
  });

  test("a bitcoin leaf whose message is not 32 bytes never matches", () => {
    const proof = buildProof(bytes(append(Buffer.from("x")), bitcoinLeaf(3)));
    const headers = new Map([[3, headerWith(sampleDigest)]]);
    assert.deepEqual(statusOf(verifyProof(proof, sampleDigest, headers)), [
      "mismatch",
      "header_mismatch",
    ]);
  });

  test("pending URIs are decoded as UTF-8 with replacement", () => {
    const uri = Buffer.concat([Buffer.from("https://c.example/"), Buffer.of(0xff)]);
    const [leaf] = parseOtsProof(buildProof(pendingLeaf(uri))).leaves;
    assert.deepEqual(leaf!.attestation, { kind: "pending", value: "https://c.example/\ufffd" });
  });
});

describe("verdicts by attestation kind", () => {
  const verdict = (tree: Buffer): [string, string] =>
    statusOf(verifyProof(buildProof(tree), sampleDigest));

  test("litecoin only is anchor_unverified", () => {
    assert.deepEqual(verdict(litecoinLeaf(2_000_000)), ["unverified", "anchor_unverified"]);
  });

  test("unknown only is anchor_unknown_type", () => {
    assert.deepEqual(verdict(fork(unknownLeaf(), unknownLeaf(Buffer.of(1)))), [
      "unverified",
      "anchor_unknown_type",
    ]);
  });

  test("pending outranks litecoin and unknown", () => {
    assert.deepEqual(verdict(fork(litecoinLeaf(1), unknownLeaf(), pendingLeaf("https://c"))), [
      "unverified",
      "anchor_pending",
    ]);
  });

  test("anchor_empty cannot be reached: a tree without a leaf is truncated", () => {
    // Every branch of the grammar ends in an attestation, so a proof that parses always has
    // at least one leaf; the shortest "empty" tree is no tree at all, which is a truncation.
    assertRejected(buildProof(Buffer.alloc(0)), "truncated");
    assertRejected(buildProof(bytes(OP.sha256)), "truncated");
    assertRejected(buildProof(bytes(0xff, bitcoinLeaf(1))), "truncated");
  });
});

// ---- every parse error -------------------------------------------------------------------------

describe("parse errors", () => {
  const valid = buildProof(
    fork(bytes(append(Buffer.from("ab")), bitcoinLeaf(300_000)), pendingLeaf("https://c.example")),
  );

  test("the builder's proof is valid", () => {
    assert.equal(parseOtsProof(valid).leaves.length, 2);
  });

  test("truncated: a valid proof cut anywhere", () => {
    for (const length of [0, 5, 31, 32, 33, 40, 65, 66, 67, 70, 75, 80, valid.length - 1]) {
      assertRejected(valid.subarray(0, length), "truncated");
    }
  });

  test("bad_magic: 31 bytes or more that are not the magic", () => {
    const wrongMagic = Buffer.from(valid);
    wrongMagic[3]! ^= 0x20;
    assertRejected(wrongMagic, "bad_magic");
    assertRejected(Buffer.from("This is a text file, not a proof.\n"), "bad_magic");
    assertRejected(Buffer.alloc(31), "bad_magic");
  });

  test("a file shorter than the magic is truncated, whatever its bytes", () => {
    // The header is read whole before it is compared (verifier.md §8.1: reads past the end
    // are `truncated`), so three zero bytes (base64 `AAAA`) are a cut file, not a foreign one.
    assertRejected(Buffer.from("AAAA", "base64"), "truncated");
    assertRejected(Buffer.from("Hello World!\n"), "truncated");
    for (let length = 0; length < 31; length++) {
      assertRejected(Buffer.alloc(length, 0xab), "truncated");
    }
  });

  test("unsupported_version", () => {
    assertRejected(buildProof(bitcoinLeaf(1), sampleDigest, { version: 2 }), "unsupported_version");
    assertRejected(buildProof(bitcoinLeaf(1), sampleDigest, { version: 0 }), "unsupported_version");
  });

  test("unknown_op: file hash op", () => {
    const keccakFile = buildProof(bitcoinLeaf(1), sampleDigest, { fileHashTag: OP.keccak256 });
    assertRejected(keccakFile, "unknown_op", "unsupported file hash op 0x67");
    const zero = buildProof(bitcoinLeaf(1), sampleDigest, { fileHashTag: 0x00 });
    assertRejected(zero, "unknown_op", "unsupported file hash op 0x00");
  });

  test("unknown_op: operation tag", () => {
    assertRejected(
      buildProof(bytes(0x04, bitcoinLeaf(1))),
      "unknown_op",
      "unknown operation tag 0x04",
    );
    // A fork marker must be followed by a branch, never by another fork marker.
    assertRejected(
      buildProof(bytes(0xff, 0xff, bitcoinLeaf(1), bitcoinLeaf(2))),
      "unknown_op",
      "unknown operation tag 0xff",
    );
  });

  test("unsupported_op: keccak256 inside the tree", () => {
    assertRejected(buildProof(bytes(OP.keccak256, bitcoinLeaf(1))), "unsupported_op");
  });

  test("invalid_varuint: longer than 10 bytes", () => {
    const elevenBytes = bytes(Buffer.alloc(10, 0x80), 0x01);
    assertRejected(buildProof(attestation(BITCOIN, elevenBytes)), "invalid_varuint");
    assertRejected(
      buildProof(bytes(OP.append, elevenBytes, 0x61, bitcoinLeaf(1))),
      "invalid_varuint",
    );
    // Ten bytes that all announce another: the varuint is already too long, no 11th is read.
    assertRejected(buildProof(bytes(OP.append, Buffer.alloc(10, 0xff))), "invalid_varuint");
  });

  test("varuints are exact up to 10 bytes; heights beyond 2^53 - 1 are bigints", () => {
    const paddedOne = bytes(0x81, Buffer.alloc(8, 0x80), 0x00);
    const [padded] = parseOtsProof(buildProof(attestation(BITCOIN, paddedOne))).leaves;
    assert.deepEqual(padded!.attestation, { kind: "bitcoin", value: 1 });
    const max = Number.MAX_SAFE_INTEGER;
    const [largest] = parseOtsProof(buildProof(bitcoinLeaf(max))).leaves;
    assert.deepEqual(largest!.attestation, { kind: "bitcoin", value: max });
    // 2^69 + 5 takes all ten bytes; the reference's integers are exact, so ours are too.
    const huge = bytes(0x85, Buffer.alloc(8, 0x80), 0x40);
    const proof = buildProof(attestation(BITCOIN, huge));
    const [hugeLeaf] = parseOtsProof(proof).leaves;
    assert.deepEqual(hugeLeaf!.attestation, { kind: "bitcoin", value: 2n ** 69n + 5n });
    const result = verifyProof(proof, sampleDigest);
    assert.deepEqual(statusOf(result), ["unverified", "anchor_unverified"]);
    assert.match(result.detail, /heights 590295810358705651717 /);
    const withHeader = verifyProof(
      proof,
      sampleDigest,
      new Map([[2n ** 69n + 5n, headerWith(parseOtsProof(proof).leaves[0]!.message)]]),
    );
    assert.deepEqual(statusOf(withHeader), ["verified", "anchor_verified"]);
    assert.equal(withHeader.confirmed?.block_height, 2n ** 69n + 5n);
  });

  test("a varuint's value is judged after all its bytes are read", () => {
    // Eight bytes that all announce another already exceed 2^53, but the input ends first.
    assertRejected(buildProof(bytes(OP.append, Buffer.alloc(8, 0xff))), "truncated");
    assertRejected(buildProof(bytes(OP.append, Buffer.alloc(9, 0xff))), "truncated");
    // A complete length beyond 2^53 is a length over the maximum like any other.
    const twoTo60 = bytes(Buffer.alloc(8, 0x80), 0x10);
    assertRejected(buildProof(bytes(OP.append, twoTo60)), "invalid_length");
    assertRejected(buildProof(bytes(0x00, Buffer.from(BITCOIN, "hex"), twoTo60)), "invalid_length");
  });

  test("invalid_length: operation arguments", () => {
    assertRejected(buildProof(bytes(OP.append, 0x00, bitcoinLeaf(1))), "invalid_length");
    assertRejected(buildProof(bytes(append(Buffer.alloc(4097)), bitcoinLeaf(1))), "invalid_length");
    // A declared length is checked before the bytes are read.
    assertRejected(buildProof(bytes(OP.prepend, varuint(4097))), "invalid_length");
  });

  test("invalid_length: attestation payload and calendar URI", () => {
    assertRejected(buildProof(unknownLeaf(Buffer.alloc(8193))), "invalid_length");
    assert.equal(parseOtsProof(buildProof(unknownLeaf(Buffer.alloc(8192)))).leaves.length, 1);
    assertRejected(buildProof(pendingLeaf("u".repeat(1001))), "invalid_length");
    assert.equal(parseOtsProof(buildProof(pendingLeaf("u".repeat(1000)))).leaves.length, 1);
  });

  test("trailing_data: after the tree and inside payloads", () => {
    assertRejected(Buffer.concat([valid, Buffer.of(0x00)]), "trailing_data");
    assertRejected(buildProof(attestation(BITCOIN, bytes(varuint(5), 0x00))), "trailing_data");
    assertRejected(buildProof(attestation(LITECOIN, bytes(varuint(5), 0x00))), "trailing_data");
    const pendingPayload = bytes(varbytes(Buffer.from("https://c")), 0x00);
    assertRejected(buildProof(attestation(PENDING, pendingPayload)), "trailing_data");
  });

  test("truncated inside payloads", () => {
    assertRejected(buildProof(attestation(BITCOIN, Buffer.alloc(0))), "truncated");
    assertRejected(buildProof(attestation(PENDING, bytes(varuint(9), 0x68))), "truncated");
  });

  test("message_too_long: operation input over 4096 bytes", () => {
    // Inside a proof every input is a result already capped at 4096 bytes, so the limit can
    // only be reached by replaying an operation directly.
    assert.throws(
      () => applyOperation({ kind: "reverse" }, Buffer.alloc(4097, 1)),
      (error) => error instanceof AnchorProofError && error.code === "message_too_long",
    );
    assert.equal(applyOperation({ kind: "reverse" }, Buffer.alloc(4096, 1)).length, 4096);
  });

  test("invalid_result: results over 4096 bytes", () => {
    assertRejected(buildProof(bytes(append(Buffer.alloc(4065)), bitcoinLeaf(1))), "invalid_result");
    const exactlyFull = buildProof(bytes(prepend(Buffer.alloc(4064)), bitcoinLeaf(1)));
    assert.equal(parseOtsProof(exactlyFull).leaves[0]!.message.length, 4096);
    // 32 bytes hexlified seven times is 4096 bytes; the eighth doubles it past the limit.
    const hexlifyChain = (count: number): Buffer =>
      bytes(Buffer.alloc(count, OP.hexlify), bitcoinLeaf(1));
    assert.equal(parseOtsProof(buildProof(hexlifyChain(7))).leaves[0]!.message.length, 4096);
    assertRejected(buildProof(hexlifyChain(8)), "invalid_result");
  });

  test("recursion_limit: more than 256 nested operations", () => {
    const nested = (depth: number): Buffer => bytes(Buffer.alloc(depth, OP.sha256), bitcoinLeaf(1));
    const [leaf] = parseOtsProof(buildProof(nested(256))).leaves;
    let expected = sampleDigest;
    for (let i = 0; i < 256; i++) expected = hash("sha256", expected);
    assert.equal(Buffer.from(leaf!.message).toString("hex"), expected.toString("hex"));
    assertRejected(buildProof(nested(257)), "recursion_limit");
  });

  test("too_many_nodes: more than 10,000 operations and attestations", () => {
    // 40 branches of 249 one-byte operations and a leaf make exactly 10,000 nodes in ~10 KB.
    const branch = bytes(Buffer.alloc(249, OP.reverse), unknownLeaf());
    const branches = (count: number): Buffer[] => Array.from({ length: count }, () => branch);
    assert.equal(parseOtsProof(buildProof(fork(...branches(40)))).leaves.length, 40);
    assertRejected(buildProof(fork(...branches(40), unknownLeaf())), "too_many_nodes");
    // Forks of bare leaves count too: 10,001 attestations at the root.
    const leaves = Array.from({ length: 10_001 }, () => unknownLeaf());
    assertRejected(buildProof(fork(...leaves)), "too_many_nodes");
  });
});

// ---- CLI -------------------------------------------------------------------------------------

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

async function runCli(...argv: string[]): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr };
}

async function runCliJson(...argv: string[]): Promise<{ code: number; result: AnchorResult }> {
  const run = await runCli(...argv, "--json");
  return { code: run.code, result: JSON.parse(run.stdout) as AnchorResult };
}

describe("continuity-receipt-anchor CLI", () => {
  const workDir = mkdtempSync(join(tmpdir(), "receiptd-anchor-"));
  after(() => rmSync(workDir, { recursive: true, force: true }));
  const helloPath = fixturePath("hello-world.txt.ots");
  const digestArg = `sha256:${helloDigest.toString("hex")}`;

  test("exit 0 and a summary when verified", async () => {
    const run = await runCli(
      "verify",
      helloPath,
      "--digest",
      digestArg,
      "--header",
      helloHeaderHex,
      "--height",
      String(HELLO_HEIGHT),
    );
    assert.equal(run.code, 0);
    assert.match(run.stdout, /^verified \(anchor_verified\)/);
    assert.match(run.stdout, /block 358391/);
    assert.equal(run.stderr, "");
  });

  test("--json prints the result object", async () => {
    const { code, result } = await runCliJson(
      "verify",
      helloPath,
      "--digest",
      digestArg,
      "--height",
      String(HELLO_HEIGHT),
      "--header",
      helloHeaderHex,
    );
    assert.equal(code, 0);
    const headers = new Map([[HELLO_HEIGHT, helloHeaderHex]]);
    assert.deepEqual(result, verifyProof(helloProof, helloDigest, headers));
  });

  test("heights are exact at any size, in --height and in the printed result", async () => {
    const height = 2n ** 69n + 5n;
    const proof = buildProof(attestation(BITCOIN, bytes(0x85, Buffer.alloc(8, 0x80), 0x40)));
    const proofPath = join(workDir, "huge-height.ots");
    writeFileSync(proofPath, proof);
    const header = headerWith(parseOtsProof(proof).leaves[0]!.message).toString("hex");
    const digest = sampleDigest.toString("hex");
    const args = ["verify", proofPath, "--digest", digest, "--json"];
    const run = await runCli(...args, "--header", header, "--height", String(height));
    assert.equal(run.code, 0, run.stdout);
    assert.match(run.stdout, /"block_height": 590295810358705651717\b/);
    assert.match(run.stdout, /"value": 590295810358705651717\b/);
    const elsewhere = await runCliJson(
      ...args,
      "--header",
      header,
      "--height",
      "590295810358705651716",
    );
    assert.deepEqual([elsewhere.code, elsewhere.result.code], [1, "header_mismatch"]);
  });

  test("exit 1 for every non-verified result", async () => {
    const unverified = await runCliJson("verify", helloPath, "--digest", digestArg);
    assert.deepEqual([unverified.code, unverified.result.code], [1, "anchor_unverified"]);
    // A header without --height is stored at height 0, where this proof has no attestation.
    const atZero = await runCliJson(
      "verify",
      helloPath,
      "--digest",
      digestArg,
      "--header",
      helloHeaderHex,
    );
    assert.deepEqual([atZero.code, atZero.result.code], [1, "header_mismatch"]);
    const badDigest = await runCliJson("verify", helloPath, "--digest", "sha512:00");
    assert.deepEqual([badDigest.code, badDigest.result.code], [1, "bad_digest"]);
    const missing = await runCliJson("verify", join(workDir, "missing.ots"), "--digest", digestArg);
    assert.deepEqual(
      [missing.code, missing.result.status, missing.result.code],
      [1, "invalid", "io_error"],
    );
  });

  test("exit 2 with usage on stderr for usage errors", async () => {
    for (const argv of [
      [],
      ["check", helloPath, "--digest", digestArg],
      ["verify", "--digest", digestArg],
      ["verify", helloPath],
      ["verify", helloPath, "extra", "--digest", digestArg],
      ["verify", helloPath, "--digest", digestArg, "--bundle", "b.json", "--target", "r"],
      ["verify", helloPath, "--bundle", "b.json"],
      ["verify", helloPath, "--target", "r"],
      ["verify", helloPath, "--digest", digestArg, "--height", "-1", "--header", "00"],
      ["verify", helloPath, "--digest", digestArg, "--height", "1"],
      ["verify", helloPath, "--digest", digestArg, "--unknown"],
      ["verify", helloPath, "--digest"],
    ]) {
      const run = await runCli(...argv);
      assert.equal(run.code, 2, JSON.stringify(argv));
      assert.match(run.stderr, /usage: continuity-receipt-anchor verify/);
      assert.equal(run.stdout, "");
    }
  });

  test("usage is shown under the name the tool was run as", async () => {
    let stdout = "";
    const io = {
      stdout: (text: string) => {
        stdout += text;
      },
      stderr: () => {},
    };
    assert.equal(await main(["--help"], io, "receiptd anchor"), 0);
    assert.match(stdout, /^usage: receiptd anchor verify <proof>/);
    assert.doesNotMatch(stdout, /continuity-receipt-anchor/);
  });

  test("an unknown option is one line and the usage", async () => {
    const run = await runCli("verify", helloPath, "--digest", digestArg, "--quik");
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^error: unknown option '--quik'\nusage: /);
  });

  describe("--headers FILE", () => {
    const headersPath = fixturePath("headers.json");
    const write = (name: string, content: string): string => {
      const path = join(workDir, name);
      writeFileSync(path, content);
      return path;
    };

    test("takes the corpus's headers.json as it is", async () => {
      const { code, result } = await runCliJson(
        "verify",
        helloPath,
        "--digest",
        digestArg,
        "--headers",
        headersPath,
      );
      assert.equal(code, 0);
      assert.equal(result.confirmed?.block_height, HELLO_HEIGHT);
      assert.deepEqual(
        result,
        verifyProof(helloProof, helloDigest, new Map([[HELLO_HEIGHT, helloHeaderHex]])),
      );
    });

    test("takes a bare {height: hex} object, repeated and next to --header", async () => {
      const bare = write("bare.json", JSON.stringify({ [HELLO_HEIGHT]: helloHeaderHex }));
      const other = write("other.json", JSON.stringify({ "1": "00".repeat(80) }));
      const { code } = await runCliJson(
        "verify",
        helloPath,
        "--digest",
        digestArg,
        "--headers",
        other,
        "--headers",
        bare,
        "--header",
        helloHeaderHex.toUpperCase(),
        "--height",
        String(HELLO_HEIGHT),
      );
      assert.equal(code, 0);
    });

    test("an unusable file is a usage error naming it, with nothing on stdout", async () => {
      const cases: [string, RegExp][] = [
        [join(workDir, "absent-headers.json"), /--headers .*absent-headers\.json: ENOENT/],
        [write("not-json-headers.json", "{"), /not-json-headers\.json: /],
        [write("list.json", "[]"), /expected an object of hex headers keyed by block height/],
        [write("key.json", '{"tip": "00"}'), /"tip" is not a block height/],
        [
          write("value.json", '{"headers": {"7": 7}}'),
          /the header at height 7 is not a hex string/,
        ],
        [
          write("conflict.json", JSON.stringify({ [HELLO_HEIGHT]: "00".repeat(80) })),
          /gives height 358391 a second, different header/,
        ],
      ];
      for (const [path, message] of cases) {
        const run = await runCli(
          "verify",
          helloPath,
          "--digest",
          digestArg,
          "--headers",
          headersPath,
          "--headers",
          path,
        );
        assert.equal(run.code, 2, path);
        assert.equal(run.stdout, "");
        assert.match(run.stderr, message);
        assert.match(run.stderr, /\nusage: continuity-receipt-anchor verify /);
      }
    });
  });

  describe("--bundle", () => {
    const receiptId = "urn:uuid:00000000-0000-4000-8000-0000000000a1";
    const receipt = {
      spec: "continuity-receipt/0.4",
      receipt_id: receiptId,
      type: "task.started",
      seq: 0,
      body: { note: "anchored" },
      sig: { alg: "ed25519", value: "c2ln" },
    };
    const receiptDigest = recordDigest(fromPlain(receipt));
    const digestBytes = Buffer.from(receiptDigest.slice("sha256:".length), "hex");
    const height = 800_000;
    const proofPath = join(workDir, "receipt.ots");
    writeFileSync(proofPath, buildProof(bytes(OP.sha256, bitcoinLeaf(height)), digestBytes));
    const headerHex = headerWith(hash("sha256", digestBytes)).toString("hex");

    const writeBundle = (name: string, anchors: unknown[]): string => {
      const path = join(workDir, name);
      writeFileSync(
        path,
        JSON.stringify({ spec: "continuity-receipt/0.4", receipts: [receipt], anchors }),
      );
      return path;
    };
    const otsAnchor = (hash: string) => ({
      target: receiptId,
      hash,
      anchor: { type: "opentimestamps" },
    });
    const bound = writeBundle("bound.json", [otsAnchor(receiptDigest)]);
    const verifyBundle = (bundlePath: string, target = receiptId) =>
      runCliJson(
        "verify",
        proofPath,
        "--bundle",
        bundlePath,
        "--target",
        target,
        "--header",
        headerHex,
        "--height",
        String(height),
      );

    test("recomputes the receipt digest and verifies the bound proof", async () => {
      const { code, result } = await verifyBundle(bound);
      assert.equal(code, 0);
      assert.equal(result.code, "anchor_verified");
      assert.equal(result.file_digest, receiptDigest);
      assert.equal(result.confirmed?.block_height, height);
    });

    test("an unknown target is invalid/unknown_target", async () => {
      const { code, result } = await verifyBundle(bound, "urn:uuid:missing");
      assert.deepEqual([code, result.status, result.code], [1, "invalid", "unknown_target"]);
    });

    test("an anchor entry with another hash, or no opentimestamps entry, is a binding mismatch", async () => {
      const otherHash = `sha256:${"00".repeat(32)}`;
      for (const anchors of [
        [otsAnchor(otherHash)],
        [{ target: receiptId, hash: receiptDigest, anchor: { type: "custom" } }],
        [],
      ]) {
        const { code, result } = await verifyBundle(writeBundle("unbound.json", anchors));
        assert.deepEqual(
          [code, result.status, result.code],
          [1, "mismatch", "anchor_binding_mismatch"],
        );
      }
    });

    test("an unreadable or malformed bundle is invalid/io_error", async () => {
      const notJson = join(workDir, "not-json.json");
      writeFileSync(notJson, "{receipts:");
      for (const path of [notJson, join(workDir, "absent.json")]) {
        const { code, result } = await verifyBundle(path);
        assert.deepEqual([code, result.status, result.code], [1, "invalid", "io_error"]);
      }
    });
  });
});
