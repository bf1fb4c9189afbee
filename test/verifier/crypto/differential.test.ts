/**
 * The libsodium provider (`src/verifier/crypto/sodium.ts`) against OpenSSL (`node:crypto`) on
 * more than 100,000 generated Ed25519 inputs: its answer must be OpenSSL's on every one.
 *
 * The inputs are the ones where Ed25519 libraries part ways: valid signatures and single-bit
 * flips of R, S, the key and the message; S ≥ L; every small-order point as the key and as R,
 * in each of its encodings (sign bit set on x = 0, y ≥ p); the other y ≥ p encodings; keys
 * and R of mixed order (a·B plus a torsion point), where a cofactored equation would accept
 * what OpenSSL refuses; all-zero and all-0xFF values; random bytes. The same inputs are also
 * asked of libsodium alone, to show that the provider's routing is what makes the answers
 * equal: libsodium by itself disagrees with OpenSSL on some of them.
 *
 * The inputs come from a fixed seed, so a failure reproduces. The unit lane checks a
 * seed-fixed 1 in 11 of them (every family is in it); `npm test` and the other runs check all
 * (test/support/depth.ts, docs/testing.md).
 */
import assert from "node:assert/strict";
import { createHash, createPrivateKey, createPublicKey, sign } from "node:crypto";
import { test } from "node:test";
import { ED25519_TORSION_SUBGROUP, ed25519 } from "@noble/curves/ed25519";
import sodium from "sodium-native";
import {
  isNonCanonicalEncoding,
  isSmallOrderEncoding,
} from "../../../src/verifier/crypto/edge-points.js";
import { nobleCrypto } from "../../../src/verifier/crypto/noble.js";
import {
  nodeCrypto,
  OPENSSL_DECIDES_EDGES,
  opensslVerifier,
  pinnedEdgesVerifier,
} from "../../../src/verifier/crypto/node.js";
import type { Ed25519Verifier } from "../../../src/verifier/crypto/provider.js";
import { loadSodiumCrypto } from "../../../src/verifier/crypto/sodium.js";
import { FULL_DEPTH, sampleOf } from "../../support/depth.js";
import { L, le32, leToBigint, P } from "../../support/ed25519-numbers.js";

const { Point } = ed25519;
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX_LENGTH = 12;

/** A deterministic byte stream: SHA-512 of the seed and a counter. */
class Stream {
  #counter = 0;
  #pool = Buffer.alloc(0);
  constructor(readonly seed: string) {}
  bytes(length: number): Buffer {
    while (this.#pool.length < length) {
      const block = createHash("sha512")
        .update(`${this.seed}/${this.#counter++}`)
        .digest();
      this.#pool = Buffer.concat([this.#pool, block]);
    }
    const out = this.#pool.subarray(0, length);
    this.#pool = this.#pool.subarray(length);
    return Buffer.from(out);
  }
  below(limit: number): number {
    return this.bytes(4).readUInt32LE() % limit;
  }
  scalar(): bigint {
    return leToBigint(this.bytes(64)) % L;
  }
  message(): Buffer {
    return this.bytes(this.below(160));
  }
}

const random = new Stream("receiptd differential 2026-11-26");

function challenge(r: Uint8Array, a: Uint8Array, message: Uint8Array): bigint {
  return leToBigint(createHash("sha512").update(r).update(a).update(message).digest()) % L;
}

function flipBit(bytes: Uint8Array, bit: number): Buffer {
  const out = Buffer.from(bytes);
  out[bit >> 3]! ^= 1 << (bit & 7);
  return out;
}

const signature = (r: Uint8Array, s: bigint) => Buffer.concat([r, le32(s)]);

interface Case {
  family: string;
  key: Buffer;
  message: Buffer;
  signature: Buffer;
}

/** The 14 encodings libsodium lists as small order: 7 values of y, each with either sign bit. */
const SMALL_ORDER_ENCODINGS: Buffer[] = [
  0n,
  1n,
  leToBigint(Buffer.from(ED25519_TORSION_SUBGROUP[1]!, "hex")) & ((1n << 255n) - 1n),
  leToBigint(Buffer.from(ED25519_TORSION_SUBGROUP[3]!, "hex")) & ((1n << 255n) - 1n),
  P - 1n,
  P,
  P + 1n,
].flatMap((y) => [le32(y), le32(y | (1n << 255n))]);

/** Every y ≥ p, with either sign bit: 38 encodings (p and p + 1 are small order too). */
const HIGH_Y_ENCODINGS: Buffer[] = Array.from({ length: 19 }, (_, i) => P + BigInt(i)).flatMap(
  (y) => [le32(y), le32(y | (1n << 255n))],
);

/** The torsion points other than the identity, as noble points. */
const TORSION = ED25519_TORSION_SUBGROUP.slice(1).map((hex) => Point.fromHex(hex));

/** A key with a known scalar: a·B, plus `torsion` when given (a mixed-order key). */
function scalarKey(torsion?: (typeof TORSION)[number]) {
  const a = random.scalar();
  const point = Point.BASE.multiply(a);
  return { a, bytes: Buffer.from((torsion === undefined ? point : point.add(torsion)).toBytes()) };
}

function generateCases(): Case[] {
  const cases: Case[] = [];
  const add = (family: string, key: Buffer, message: Buffer, sig: Buffer) =>
    cases.push({ family, key, message, signature: sig });

  // Valid signatures by ordinary keys, and every single-bit flip family.
  for (let i = 0; i < 1600; i++) {
    const seed = random.bytes(32);
    const privateKey = createPrivateKey({
      key: Buffer.concat([PKCS8_PREFIX, seed]),
      format: "der",
      type: "pkcs8",
    });
    const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
    const key = Buffer.from(spki.subarray(SPKI_PREFIX_LENGTH));
    for (let j = 0; j < 4; j++) {
      const message = random.message();
      const sig = sign(null, message, privateKey);
      add("valid", key, message, sig);
      add("R bit flipped", key, message, flipBit(sig, random.below(256)));
      add("S bit flipped", key, message, flipBit(sig, 256 + random.below(256)));
      add("key bit flipped", flipBit(key, random.below(256)), message, sig);
      add(
        "message bit flipped",
        key,
        message.length === 0
          ? Buffer.from([random.below(256)])
          : flipBit(message, random.below(message.length * 8)),
        sig,
      );
      // S ≥ L: the same equation holds for S + L and S + 2L modulo L.
      if (j < 2) {
        const r = sig.subarray(0, 32);
        const s = leToBigint(sig.subarray(32));
        add("S + L", key, message, signature(r, s + L));
        add("S + 2L", key, message, signature(r, s + 2n * L));
        if (s + 15n * L < 2n ** 256n) add("S + 15L", key, message, signature(r, s + 15n * L));
      }
    }
  }
  const threshold = [L, L + 1n, 2n ** 253n - 1n, 2n ** 256n - 1n];
  for (let i = 0; i < 200; i++) {
    const { a, bytes } = scalarKey();
    const message = random.message();
    const r = Buffer.from(Point.BASE.multiply(1n + random.scalar()).toBytes());
    add("S ≥ L (fixed values)", bytes, message, signature(r, threshold[i % threshold.length]!));
    add("S = k·a + L", bytes, message, signature(r, ((challenge(r, bytes, message) * a) % L) + L));
  }

  // Small-order points as the key: [k]A vanishes for some k only, so R = [s]B, S = s verifies
  // for some messages and not others. Also with R small order, S = 0 and S random.
  const nonces = Array.from({ length: 24 }, () => {
    const s = 1n + random.scalar();
    return { s, r: Buffer.from(Point.BASE.multiply(s).toBytes()) };
  });
  for (const key of SMALL_ORDER_ENCODINGS) {
    for (let i = 0; i < 450; i++) {
      const message = random.message();
      const nonce = nonces[i % nonces.length]!;
      add("small-order key, R = [s]B", key, message, signature(nonce.r, nonce.s));
      const rSmall = SMALL_ORDER_ENCODINGS[i % SMALL_ORDER_ENCODINGS.length]!;
      add("small-order key, small-order R, S = 0", key, message, signature(rSmall, 0n));
      if (i % 4 === 0) add("small-order key, random signature", key, message, random.bytes(64));
    }
  }

  // Small-order points as R. With S = k·a, R' = [S]B − [k]A is the identity for a key of
  // prime order, and −[k]T for a mixed-order key a·B + T: OpenSSL accepts exactly when R's
  // bytes are R' encoded canonically.
  const keys = [scalarKey(), scalarKey(), ...TORSION.map((torsion) => scalarKey(torsion))];
  for (const { a, bytes } of keys) {
    for (const r of SMALL_ORDER_ENCODINGS) {
      for (let i = 0; i < 80; i++) {
        const message = random.message();
        const k = challenge(r, bytes, message);
        add("small-order R, S = k·a", bytes, message, signature(r, (k * a) % L));
        if (i % 2 === 0)
          add("small-order R, random S", bytes, message, signature(r, random.scalar()));
      }
    }
  }

  // y ≥ p: as the key (with R = [s]B, S = s, and random signatures) and as R (S = k·a, whose
  // R' is the identity: OpenSSL compares bytes, so only the canonical 01 00 … 00 can match).
  for (const key of HIGH_Y_ENCODINGS) {
    for (let i = 0; i < 70; i++) {
      const message = random.message();
      const nonce = nonces[i % nonces.length]!;
      add("y ≥ p key, R = [s]B", key, message, signature(nonce.r, nonce.s));
      add("y ≥ p key, random signature", key, message, random.bytes(64));
    }
  }
  for (const { a, bytes } of keys.slice(0, 2)) {
    for (const r of HIGH_Y_ENCODINGS) {
      for (let i = 0; i < 40; i++) {
        const message = random.message();
        add(
          "y ≥ p R, S = k·a",
          bytes,
          message,
          signature(r, (challenge(r, bytes, message) * a) % L),
        );
      }
    }
  }

  // Mixed-order keys with honest signatures: R = [r]B, S = r + k·a. Without the cofactor this
  // verifies only when [k]T vanishes; a cofactored check would accept them all. Then R of
  // mixed order, [r]B + T, with an honest S: R − R' is a torsion point, never zero.
  for (const torsion of TORSION) {
    for (let n = 0; n < 4; n++) {
      const { a, bytes } = scalarKey(torsion);
      const rScalar = 1n + random.scalar();
      const r = Buffer.from(Point.BASE.multiply(rScalar).toBytes());
      for (let i = 0; i < 200; i++) {
        const message = random.message();
        const s = (rScalar + challenge(r, bytes, message) * a) % L;
        add("mixed-order key, honest signature", bytes, message, signature(r, s));
        if (i % 4 === 0) {
          add(
            "mixed-order key, S bit flipped",
            bytes,
            message,
            flipBit(signature(r, s), 256 + random.below(252)),
          );
        }
      }
    }
    for (const key of [scalarKey(), scalarKey(TORSION[random.below(TORSION.length)])]) {
      const rScalar = 1n + random.scalar();
      const r = Buffer.from(Point.BASE.multiply(rScalar).add(torsion).toBytes());
      for (let i = 0; i < 100; i++) {
        const message = random.message();
        const s = (rScalar + challenge(r, key.bytes, message) * key.a) % L;
        add("mixed-order R, honest S", key.bytes, message, signature(r, s));
      }
    }
  }

  // x = 0 with the sign bit set (the identity and the point of order 2), as key and as R.
  const signedZeroX = [le32(1n | (1n << 255n)), le32((P - 1n) | (1n << 255n))];
  for (const encoding of signedZeroX) {
    for (let i = 0; i < 400; i++) {
      const message = random.message();
      const nonce = nonces[i % nonces.length]!;
      add("x = 0, sign bit set: key", encoding, message, signature(nonce.r, nonce.s));
      const { a, bytes } = keys[i % keys.length]!;
      add(
        "x = 0, sign bit set: R",
        bytes,
        message,
        signature(encoding, (challenge(encoding, bytes, message) * a) % L),
      );
    }
  }

  // All-zero and all-0xFF values, alone and with the rest valid.
  const zero = Buffer.alloc(32);
  const ff = Buffer.alloc(32, 0xff);
  const ordinary = scalarKey();
  for (let i = 0; i < 250; i++) {
    const message =
      i % 3 === 0 ? Buffer.alloc(0) : i % 3 === 1 ? Buffer.alloc(1 + (i % 64)) : random.message();
    for (const key of [zero, ff, ordinary.bytes]) {
      for (const r of [zero, ff, nonces[i % nonces.length]!.r]) {
        for (const s of [zero, ff, le32(0n), le32(nonces[i % nonces.length]!.s)]) {
          add("all-zero / all-0xFF", key, message, Buffer.concat([r, s]));
        }
      }
    }
  }

  // Random bytes: a random key and signature, and a real key with a random signature.
  for (let i = 0; i < 6000; i++) {
    add("random key and signature", random.bytes(32), random.message(), random.bytes(64));
    if (i % 3 === 0)
      add("ordinary key, random signature", ordinary.bytes, random.message(), random.bytes(64));
  }
  return cases;
}

/**
 * The unit lane's sample: every 11th input. Odd, so that families generated in alternation
 * (two or four per step) all come in, and small enough that the lane takes seconds here.
 */
const SAMPLE_STRIDE = 11;

/** Every family of `all` has cases in `sample`. */
function assertEveryFamily(all: Case[], sample: Case[]): void {
  const sampled = new Set(sample.map((c) => c.family));
  for (const family of new Set(all.map((c) => c.family))) {
    assert.ok(sampled.has(family), `the sample has ${family} cases`);
  }
}

/** One prepared verifier per key and implementation, as the did:key cache keeps them. */
function cachedVerifiers(make: (key: Uint8Array) => Ed25519Verifier | null) {
  const cache = new Map<string, Ed25519Verifier | null>();
  return (key: Buffer): Ed25519Verifier | null => {
    const id = key.toString("hex");
    let verifier = cache.get(id);
    if (verifier === undefined) {
      verifier = make(key);
      cache.set(id, verifier);
    }
    return verifier;
  };
}

test("libsodium provider: OpenSSL's answer on every generated input (100,000+; 1 in 11 in the unit lane)", (t) => {
  const loaded = loadSodiumCrypto();
  assert.equal(loaded.problem, null, "sodium-native loads on this platform");
  const provider = cachedVerifiers(loaded.crypto!.ed25519Verifier);
  const openssl = cachedVerifiers(nodeCrypto.ed25519Verifier);

  const generated = generateCases();
  assert.ok(generated.length >= 100_000, `${generated.length} cases generated`);
  const cases = sampleOf(generated, SAMPLE_STRIDE);
  assertEveryFamily(generated, cases);
  const families = new Map<string, { cases: number; accepted: number; libsodiumAlone: number }>();
  const disagreements: string[] = [];
  for (const c of cases) {
    const expected = openssl(c.key)?.(c.message, c.signature) ?? false;
    const answer = provider(c.key)?.(c.message, c.signature) ?? false;
    const alone = sodium.crypto_sign_verify_detached(c.signature, c.message, c.key);
    const family = families.get(c.family) ?? { cases: 0, accepted: 0, libsodiumAlone: 0 };
    family.cases++;
    if (expected) family.accepted++;
    if (alone !== expected) family.libsodiumAlone++;
    families.set(c.family, family);
    if (answer !== expected && disagreements.length < 10) {
      disagreements.push(
        `${c.family}: OpenSSL ${expected}, provider ${answer}; key ${c.key.toString("hex")} message ${c.message.toString("hex")} signature ${c.signature.toString("hex")}`,
      );
    }
  }
  const rows = [...families].map(
    ([name, f]) =>
      `${name}: ${f.cases} cases, ${f.accepted} accepted, libsodium alone differs on ${f.libsodiumAlone}`,
  );
  const depth = FULL_DEPTH ? "all" : `1 in ${SAMPLE_STRIDE}`;
  t.diagnostic(
    `${cases.length} cases (${depth} of ${generated.length}), ${disagreements.length} disagreements\n${rows.join("\n")}`,
  );
  assert.deepEqual(disagreements, []);

  const count = (name: string) => families.get(name)!;
  // The families that can verify do: the test exercises acceptance, not only refusal.
  for (const name of [
    "valid",
    "small-order key, R = [s]B",
    "small-order R, S = k·a",
    "mixed-order key, honest signature",
    "x = 0, sign bit set: key",
  ]) {
    assert.ok(count(name).accepted > 0, `${name} has accepted cases`);
  }
  assert.equal(count("valid").accepted, count("valid").cases);
  // And libsodium alone would have answered otherwise on some: the routing is needed.
  assert.ok(count("small-order key, R = [s]B").libsodiumAlone > 0);
  assert.ok(count("small-order R, S = k·a").libsodiumAlone > 0);
  // Where no point is small order and no encoding is y ≥ p, libsodium alone already agrees.
  for (const name of ["valid", "mixed-order key, honest signature", "mixed-order R, honest S"]) {
    assert.equal(count(name).libsodiumAlone, 0, name);
  }
});

test("OpenSSL after 3.0: the edge points get OpenSSL 3.0's answers, so a Node upgrade changes no verdict", (t) => {
  // Node 24's OpenSSL 3.5 refuses small-order and non-canonical keys and small-order R that
  // 3.0 accepts. `pinnedEdgesVerifier` sends those to noble's step-by-step 3.0 check. Under
  // OpenSSL 3.0 (Node 20, 22) this compares it, and noble, with OpenSSL itself; under a later
  // OpenSSL, with noble, OpenSSL 3.0's answers having been shown equal on the older lines.
  const pinned = cachedVerifiers(pinnedEdgesVerifier);
  const noble = cachedVerifiers(nobleCrypto.ed25519Verifier);
  const openssl = cachedVerifiers(opensslVerifier);
  const edge = (c: Case) =>
    isSmallOrderEncoding(c.key) ||
    isNonCanonicalEncoding(c.key) ||
    (c.signature.length === 64 && isSmallOrderEncoding(c.signature));
  // Every routed input, and every 25th other one (noble is about 20 times slower than OpenSSL);
  // in the unit lane, 1 in 11 of those.
  const chosen = generateCases().filter((c, i) => edge(c) || i % 25 === 0);
  const cases = sampleOf(chosen, SAMPLE_STRIDE);
  // Every family that has routed inputs (the others are only the background here).
  assertEveryFamily(chosen.filter(edge), cases);
  const disagreements: string[] = [];
  let accepted = 0;
  for (const c of cases) {
    const reference = noble(c.key)?.(c.message, c.signature) ?? false;
    const answer = pinned(c.key)?.(c.message, c.signature) ?? false;
    const checks: [string, boolean][] = [["pinned", answer]];
    if (OPENSSL_DECIDES_EDGES)
      checks.push(["OpenSSL 3.0", openssl(c.key)?.(c.message, c.signature) ?? false]);
    if (reference) accepted++;
    for (const [who, value] of checks) {
      if (value !== reference && disagreements.length < 10) {
        disagreements.push(
          `${c.family}: noble ${reference}, ${who} ${value}; key ${c.key.toString("hex")}`,
        );
      }
    }
  }
  t.diagnostic(
    `${cases.length} cases of ${chosen.length} (${accepted} accepted), OpenSSL ${process.versions.openssl}`,
  );
  assert.deepEqual(disagreements, []);
  assert.ok(accepted > 0);
});
