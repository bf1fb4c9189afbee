/**
 * The O(1) classification of Ed25519 edge points (`edge-points.ts`) and OpenSSL 3.0's answers
 * for them from libsodium's group operations (`sodium-edges.ts`), against noble's step-by-step
 * emulation of OpenSSL 3.0 (`noble.ts`, the behaviour's specification) and noble's group law.
 * Deterministic: every input comes from a fixed seed. The differential test compares the whole
 * provider with OpenSSL 3.0 itself on 100,000 inputs; this one checks each class by itself,
 * including the cases no signature can reach (k = 0). Every key class and every t is checked
 * at any depth; the unit lane takes fewer random values for each (test/support/depth.ts).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { ED25519_TORSION_SUBGROUP, ed25519 } from "@noble/curves/ed25519";
import sodium from "sodium-native";
import {
  isSmallOrderEncoding,
  SMALL_ORDER_CANONICAL,
  smallOrderPoint,
} from "../../../src/verifier/crypto/edge-points.js";
import { nobleCrypto } from "../../../src/verifier/crypto/noble.js";
import type { Ed25519Verifier } from "../../../src/verifier/crypto/provider.js";
import {
  edgeKeyVerifier,
  expectedR,
  multiplyScalars,
  smallOrderRHolds,
  splitEdgeKey,
  verifySmallOrderR,
} from "../../../src/verifier/crypto/sodium-edges.js";
import { FULL_DEPTH } from "../../support/depth.js";
import { L, le32, leToBigint, P } from "../../support/ed25519-numbers.js";

const { Point } = ed25519;
/** Values of k per key and t in the division test: 0, 4, 8 and random ones. */
const DIVISION_KS = FULL_DEPTH ? 6 : 4;
/** Messages per mixed-order key and small-order R in the signature test. */
const SMALL_ORDER_R_MESSAGES = FULL_DEPTH ? 24 : 6;
type NoblePoint = ReturnType<typeof Point.fromBytes>;

/** A deterministic stream of bytes: SHA-512 of a seed and a counter. */
function stream(seed: string) {
  let counter = 0;
  const bytes = (length: number): Buffer => {
    const out = Buffer.alloc(length);
    for (let at = 0; at < length; at += 64) {
      createHash("sha512").update(`${seed}/${counter++}`).digest().copy(out, at);
    }
    return out;
  };
  return { bytes, scalar: () => leToBigint(bytes(64)) % L };
}

const SIGN = 1n << 255n;
const G = Point.fromHex(ED25519_TORSION_SUBGROUP[1]!);
const torsion = (i: number): NoblePoint => (i === 0 ? Point.ZERO : G.multiplyUnsafe(BigInt(i)));

/** The 14 small-order encodings: 7 values of y (with p and p + 1), either sign bit. */
const SMALL_ORDER_Y = [
  0n,
  1n,
  leToBigint(Buffer.from(ED25519_TORSION_SUBGROUP[1]!, "hex")) & (SIGN - 1n),
  leToBigint(Buffer.from(ED25519_TORSION_SUBGROUP[3]!, "hex")) & (SIGN - 1n),
  P - 1n,
  P,
  P + 1n,
];
const SMALL_ORDER_ENCODINGS = SMALL_ORDER_Y.flatMap((y) => [le32(y), le32(y | SIGN)]);
/** Every y ≥ p, either sign bit: 38 encodings (p and p + 1 are of small order too). */
const HIGH_Y_ENCODINGS = Array.from({ length: 19 }, (_, i) => P + BigInt(i)).flatMap((y) => [
  le32(y),
  le32(y | SIGN),
]);

/** OpenSSL's decoding (y reduced, x = 0 with the sign bit allowed), or null for no point. */
function decode(bytes: Uint8Array): NoblePoint | null {
  try {
    return Point.fromBytes(bytes, true);
  } catch {
    return null;
  }
}

const challenge = (r: Uint8Array, key: Uint8Array, message: Uint8Array) =>
  leToBigint(createHash("sha512").update(r).update(key).update(message).digest()) % L;
const minus = (s: bigint, k: bigint, a: NoblePoint) =>
  (s === 0n ? Point.ZERO : Point.BASE.multiply(s)).subtract(
    k === 0n ? Point.ZERO : a.multiplyUnsafe(k),
  );
/** noble's verifier per key, made once: it builds a table of the key's multiples. */
const nobleVerifiers = new Map<string, Ed25519Verifier>();
function noble(key: Uint8Array): Ed25519Verifier {
  const id = Buffer.from(key).toString("hex");
  let verifier = nobleVerifiers.get(id);
  if (verifier === undefined) {
    verifier = nobleCrypto.ed25519Verifier(key)!;
    nobleVerifiers.set(id, verifier);
  }
  return verifier;
}

describe("the O(1) table of small-order encodings", () => {
  test("each of the 14 encodings decodes to the [i]G the table names, canonical as it says", () => {
    for (const bytes of SMALL_ORDER_ENCODINGS) {
      const point = smallOrderPoint(bytes);
      assert.ok(point !== null, bytes.toString("hex"));
      assert.ok(decode(bytes)!.equals(torsion(point.index)), bytes.toString("hex"));
      const canonical = Buffer.from(decode(bytes)!.toBytes()).equals(bytes);
      assert.equal(point.canonical, canonical, bytes.toString("hex"));
    }
    // 8 canonical encodings, one per point; 6 non-canonical (y ≥ p, x = 0 with its sign bit).
    const canonical = SMALL_ORDER_ENCODINGS.filter((bytes) => smallOrderPoint(bytes)!.canonical);
    assert.equal(canonical.length, 8);
    assert.deepEqual(
      new Set(canonical.map((bytes) => smallOrderPoint(bytes)!.index)),
      new Set([0, 1, 2, 3, 4, 5, 6, 7]),
    );
  });

  test("the canonical encodings are [i]G, as noble and libsodium encode them", () => {
    for (let i = 0; i < 8; i++) {
      const bytes = Buffer.from(SMALL_ORDER_CANONICAL[i]!);
      assert.deepEqual(bytes, Buffer.from(torsion(i).toBytes()), `[${i}]G`);
      assert.deepEqual(smallOrderPoint(bytes), { index: i, canonical: true });
      // The index arithmetic is the group law: [i]G + [j]G = [i + j mod 8]G.
      for (let j = 0; j < 8; j++) {
        const sum = Buffer.alloc(32);
        sodium.crypto_core_ed25519_add(sum, bytes, SMALL_ORDER_CANONICAL[j]!);
        assert.deepEqual(sum, Buffer.from(SMALL_ORDER_CANONICAL[(i + j) % 8]!));
      }
    }
  });

  test("no other encoding is in it: mixed-order points, the other y ≥ p, near misses", () => {
    const random = stream("edge table");
    for (let i = 1; i < 8; i++) {
      const mixed = Point.BASE.multiply(random.scalar()).add(torsion(i));
      assert.equal(smallOrderPoint(mixed.toBytes()), null);
    }
    for (const bytes of HIGH_Y_ENCODINGS) {
      const y = leToBigint(bytes) & (SIGN - 1n);
      assert.equal(isSmallOrderEncoding(bytes), y === P || y === P + 1n, bytes.toString("hex"));
    }
    for (const bytes of SMALL_ORDER_ENCODINGS) {
      for (const at of [15, 30, 31]) {
        const near = Buffer.from(bytes);
        near[at]! ^= at === 31 ? 0x40 : 0x01;
        assert.equal(smallOrderPoint(near), null, near.toString("hex"));
      }
    }
    for (let i = 0; i < 2000; i++) assert.equal(smallOrderPoint(random.bytes(32)), null);
  });
});

describe("OpenSSL 3.0's arithmetic from libsodium's operations", () => {
  test("a·b mod L in 16-bit limbs is BigInt's, at the extremes and at random", () => {
    const random = stream("scalars");
    const values = [0n, 1n, L - 1n, L, 2n ** 255n, 2n ** 256n - 1n, 65535n, 65536n];
    for (let i = 0; i < 200; i++) values.push(leToBigint(random.bytes(32)));
    for (const a of values) {
      for (const b of values.slice(0, 20)) {
        assert.equal(leToBigint(multiplyScalars(sodium, le32(a), le32(b))), (a * b) % L);
      }
    }
  });

  test("R' = [S]B − [k]A for every edge key (small order, y ≥ p) is noble's", () => {
    const random = stream("expected R");
    let splits = 0;
    for (const key of [...SMALL_ORDER_ENCODINGS, ...HIGH_Y_ENCODINGS]) {
      const a = decode(key);
      const split = splitEdgeKey(sodium, key);
      assert.equal(split === null, a === null, key.toString("hex"));
      if (split === null || a === null) continue;
      splits++;
      for (let i = 0; i < 24; i++) {
        const s = i === 0 ? 0n : random.scalar();
        const k = i === 1 ? 0n : i < 10 ? BigInt(i) : random.scalar();
        assert.deepEqual(
          expectedR(sodium, split, le32(s), le32(k)),
          Buffer.from(minus(s, k, a).toBytes()),
          `key ${key.toString("hex")} s ${s} k ${k}`,
        );
      }
    }
    // The 14 small-order encodings, p and p + 1 again (either sign), and the 20 other y ≥ p
    // keys that decode.
    assert.equal(splits, 14 + 4 + 20);
  });

  test("[S]B − [k]A = [t]G by division, for each key class and every t, k = 0 included", () => {
    const random = stream("small-order R");
    const keys: { bytes: Buffer; point: NoblePoint | null }[] = [];
    for (let i = 0; i < 8; i++) {
      const point = Point.BASE.multiply(random.scalar()).add(torsion(i));
      keys.push({ bytes: Buffer.from(point.toBytes()), point });
    }
    for (const bytes of [...SMALL_ORDER_ENCODINGS, ...HIGH_Y_ENCODINGS, random.bytes(32)]) {
      keys.push({ bytes, point: decode(bytes) });
    }
    let held = 0;
    for (const { bytes, point } of keys) {
      for (let t = 0; t < 8; t++) {
        for (let i = 0; i < DIVISION_KS; i++) {
          const k = i === 0 ? 0n : i < 3 ? BigInt(i * 4) : random.scalar();
          for (const s of [0n, random.scalar()]) {
            const expected = point !== null && minus(s, k, point).equals(torsion(t));
            const answer = smallOrderRHolds(sodium, bytes, le32(s), le32(k), t);
            assert.equal(answer, expected, `key ${bytes.toString("hex")} s ${s} k ${k} t ${t}`);
            if (answer) held++;
          }
        }
        heldByConstruction(random, t, (key, s, k, expected) => {
          assert.equal(smallOrderRHolds(sodium, key, le32(s), le32(k), t), expected);
          if (expected) held++;
        });
      }
    }
    assert.ok(held > 50, `${held} cases hold`);
  });

  test("signatures with a small-order R get noble's answer: ordinary, mixed-order and edge keys", () => {
    const random = stream("small-order R signatures");
    let accepted = 0;
    let cases = 0;
    const check = (key: Uint8Array, message: Uint8Array, signature: Uint8Array) => {
      const expected = noble(key)(message, signature);
      const answer =
        edgeKeyVerifier(sodium, key)?.(message, signature) ??
        verifySmallOrderR(sodium, key, message, signature);
      assert.equal(answer, expected, `key ${Buffer.from(key).toString("hex")}`);
      cases++;
      if (expected) accepted++;
    };
    for (let j = 0; j < 8; j++) {
      const a = random.scalar();
      const key = Point.BASE.multiply(a).add(torsion(j)).toBytes();
      for (const r of SMALL_ORDER_ENCODINGS) {
        for (let i = 0; i < SMALL_ORDER_R_MESSAGES; i++) {
          const message = random.bytes(i);
          const k = challenge(r, key, message);
          // S = k·a: R' = −[k·j]G, accepted exactly when R is its canonical encoding.
          check(key, message, Buffer.concat([r, le32((k * a) % L)]));
          check(key, message, Buffer.concat([r, le32(0n)]));
          check(key, message, Buffer.concat([r, le32(random.scalar())]));
          if (i === 0) check(key, message, Buffer.concat([r, le32(((k * a) % L) + L)]));
        }
      }
    }
    for (const key of [...SMALL_ORDER_ENCODINGS, ...HIGH_Y_ENCODINGS]) {
      for (const r of SMALL_ORDER_ENCODINGS) {
        const message = random.bytes(8);
        check(key, message, Buffer.concat([r, le32(0n)]));
        check(key, message, Buffer.concat([r, le32(random.scalar())]));
      }
    }
    // Some hold (S = k·a where R' is R's canonical encoding): 68 of 3,584 in the sample.
    assert.ok(accepted > cases / 100, `${accepted} of ${cases} accepted`);
  });

  test("edge keys with any R: honest R = [s]B, random signatures, S ≥ L", () => {
    const random = stream("edge keys");
    let accepted = 0;
    for (const key of [...SMALL_ORDER_ENCODINGS, ...HIGH_Y_ENCODINGS]) {
      const verifier = edgeKeyVerifier(sodium, key)!;
      for (let i = 0; i < 16; i++) {
        const message = random.bytes(i * 3);
        const s = random.scalar();
        const signatures = [
          Buffer.concat([Point.BASE.multiply(s).toBytes(), le32(s)]),
          Buffer.concat([Point.BASE.multiply(s).toBytes(), le32(s + L)]),
          random.bytes(64),
        ];
        for (const signature of signatures) {
          const expected = noble(key)(message, signature);
          assert.equal(verifier(message, signature), expected, key.toString("hex"));
          if (expected) accepted++;
        }
      }
      assert.equal(verifier(Buffer.alloc(0), Buffer.alloc(63)), false);
    }
    assert.ok(accepted > 0);
    // An ordinary key is not an edge key: libsodium decides it.
    assert.equal(edgeKeyVerifier(sodium, Point.BASE.multiply(3n).toBytes()), null);
  });
});

/**
 * For a small-order R = [t]G: keys A = [s·k⁻¹]B + [j]G (j = 0..7) with k ≠ 0 random, so that
 * [S]B − [k]A = −[k·j]G, which is [t]G exactly when k·j + t ≡ 0 (mod 8).
 */
function heldByConstruction(
  random: ReturnType<typeof stream>,
  t: number,
  check: (key: Uint8Array, s: bigint, k: bigint, expected: boolean) => void,
): void {
  for (let j = 0; j < 8; j++) {
    const k = random.scalar() || 1n;
    const s = random.scalar();
    const kInverse = modInverse(k);
    const key = Point.BASE.multiplyUnsafe((s * kInverse) % L)
      .add(torsion(j))
      .toBytes();
    check(key, s, k, (Number(k % 8n) * j + t) % 8 === 0);
  }
}

function modInverse(value: bigint): bigint {
  let [a, b, x, y] = [value % L, L, 1n, 0n];
  while (b !== 0n) {
    const q = a / b;
    [a, b] = [b, a - q * b];
    [x, y] = [y, x - q * y];
  }
  return ((x % L) + L) % L;
}
