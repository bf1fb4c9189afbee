/**
 * Loading the libsodium provider (`src/verifier/crypto/sodium.ts`): the fallback where
 * sodium-native cannot load or answers otherwise than OpenSSL, the encodings it sends to
 * OpenSSL, and signing: libsodium's signature bytes are node:crypto's.
 */
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, sign } from "node:crypto";
import { describe, test } from "node:test";
import { ED25519_TORSION_SUBGROUP } from "@noble/curves/ed25519";
import sodium from "sodium-native";
import { signerFromPrivateKey, signerFromSeed } from "../../../src/verifier/crypto/ed25519.js";
import {
  isNonCanonicalEncoding,
  isSmallOrderEncoding,
} from "../../../src/verifier/crypto/edge-points.js";
import { nodeCrypto } from "../../../src/verifier/crypto/node.js";
import {
  platformCrypto,
  platformCryptoProblem,
  platformEd25519Sign,
} from "../../../src/verifier/crypto/platform.js";
import { loadSodiumCrypto } from "../../../src/verifier/crypto/sodium.js";
import { le32, P } from "../../support/ed25519-numbers.js";

const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

describe("loading sodium-native", () => {
  test("on this platform the server verifies with libsodium", () => {
    assert.equal(platformCryptoProblem, null);
    assert.equal(platformCrypto.id, "libsodium");
    assert.match(platformCrypto.name, /^libsodium \(sodium-native 5\.1\.0\)/);
    assert.notEqual(platformEd25519Sign, null);
  });

  test("a library that does not load is reported, not used", () => {
    const loaded = loadSodiumCrypto(() => {
      throw new Error("No native build was found for platform=plan9 arch=mips\nmore detail");
    });
    assert.equal(loaded.crypto, null);
    assert.equal(
      loaded.problem,
      "sodium-native did not load: No native build was found for platform=plan9 arch=mips",
    );
  });

  test("a library that accepts what OpenSSL refuses is not used", () => {
    // As a cofactored (or small-order tolerant) libsodium would: it accepts the mixed-order key.
    const lenient = { ...sodium, crypto_sign_verify_detached: () => true };
    const loaded = loadSodiumCrypto(() => ({ sodium: lenient, version: "9.9.9" }));
    assert.equal(loaded.crypto, null);
    assert.equal(
      loaded.problem,
      "sodium-native 9.9.9 accepts the signature 'mixed key 0' that OpenSSL refuses",
    );
  });
});

describe("the encodings sent to OpenSSL", () => {
  const smallOrderY = [
    0n,
    1n,
    BigInt(`0x${Buffer.from(ED25519_TORSION_SUBGROUP[1]!, "hex").reverse().toString("hex")}`),
    BigInt(`0x${Buffer.from(ED25519_TORSION_SUBGROUP[3]!, "hex").reverse().toString("hex")}`),
    P - 1n,
    P,
    P + 1n,
  ].map((y) => y & ((1n << 255n) - 1n));

  test("the 14 small-order encodings, and nothing next to them", () => {
    for (const y of smallOrderY) {
      assert.ok(isSmallOrderEncoding(le32(y)), y.toString(16));
      assert.ok(
        isSmallOrderEncoding(le32(y | (1n << 255n))),
        `${y.toString(16)} with the sign bit`,
      );
      assert.ok(!isSmallOrderEncoding(le32(y ^ 4n)), `${y.toString(16)} ^ 4`);
      assert.ok(!isSmallOrderEncoding(le32(y ^ (1n << 200n))), `${y.toString(16)} ^ 2^200`);
    }
    // Every torsion point as noble encodes it (canonical) is in the list.
    for (const hex of ED25519_TORSION_SUBGROUP) {
      assert.ok(isSmallOrderEncoding(Buffer.from(hex, "hex")), hex);
    }
  });

  test("y ≥ p, with either sign bit, is non-canonical; y < p is not", () => {
    for (let i = 0n; i < 19n; i++) {
      assert.ok(isNonCanonicalEncoding(le32(P + i)));
      assert.ok(isNonCanonicalEncoding(le32((P + i) | (1n << 255n))));
    }
    assert.ok(!isNonCanonicalEncoding(le32(P - 1n)));
    assert.ok(!isNonCanonicalEncoding(le32((P - 1n) | (1n << 255n))));
    assert.ok(!isNonCanonicalEncoding(le32(0n)));
  });
});

describe("signing", () => {
  test("libsodium's signatures are node:crypto's, byte for byte", () => {
    for (let i = 0; i < 200; i++) {
      const seed = Buffer.alloc(32, i);
      seed.writeUInt32LE((i * 2654435761) >>> 0, 0);
      const privateKey = createPrivateKey({
        key: Buffer.concat([PKCS8_PREFIX, seed]),
        format: "der",
        type: "pkcs8",
      });
      const signer = signerFromPrivateKey(privateKey);
      const message = Buffer.from(`receipt ${i} `.repeat(i % 40));
      const expected = sign(null, message, privateKey);
      assert.deepEqual(signer.sign(message), expected);
      // And through libsodium directly, with the secret key it derives from the seed.
      const publicKey = Buffer.alloc(32);
      const secretKey = Buffer.alloc(64);
      sodium.crypto_sign_seed_keypair(publicKey, secretKey, seed);
      assert.deepEqual(platformEd25519Sign!(message, secretKey), expected);
      const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
      assert.deepEqual(publicKey, spki.subarray(12));
      assert.ok(nodeCrypto.ed25519Verifier(publicKey)!(message, expected));
    }
  });

  test("a signer from a seed signs as its key does", () => {
    const signer = signerFromSeed(Buffer.alloc(32, 7));
    const message = Buffer.from("settlement");
    assert.deepEqual(signer.sign(message), sign(null, message, signer.privateKey));
  });
});
