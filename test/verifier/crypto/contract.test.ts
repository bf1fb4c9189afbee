/**
 * One contract for every implementation of the crypto interface (`src/verifier/crypto/
 * provider.ts`): libsodium with OpenSSL for the unusual inputs (the server's default), OpenSSL
 * through node:crypto (the server's fallback) and @noble (the browser page).
 *
 * The Ed25519 cases are the ones where libraries disagree: a non-canonical S, small-order
 * and mixed-order keys, non-canonical encodings of A and R, x = 0 with the sign bit set,
 * bytes that are no point. The expected answers are OpenSSL's, which is what the Python
 * reference runs; the node implementation *is* OpenSSL, so a wrong expectation fails there
 * first. Then a differential run (signatures with one bit flipped) and the whole corpus
 * under each implementation, compared with the reference's recorded output.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync, sign } from "node:crypto";
import { after, describe, test } from "node:test";
import { ED25519_TORSION_SUBGROUP, ed25519 } from "@noble/curves/ed25519";
import { sha512 } from "@noble/hashes/sha2";
import { verifyProof } from "../../../src/verifier/anchor/index.js";
import { verifyBundleBytes } from "../../../src/verifier/bundle/verify-document.js";
import { b64uEncode } from "../../../src/verifier/crypto/base64.js";
import { publicKeyToDidKey } from "../../../src/verifier/crypto/did-key.js";
import { verifyEd25519 } from "../../../src/verifier/crypto/ed25519.js";
import { nobleCrypto } from "../../../src/verifier/crypto/noble.js";
import { nodeCrypto } from "../../../src/verifier/crypto/node.js";
import {
  setVerifierCrypto,
  type VerifierCrypto,
  verifierCrypto,
} from "../../../src/verifier/crypto/provider.js";
import { loadSodiumCrypto } from "../../../src/verifier/crypto/sodium.js";
import { dumpJson } from "../../../src/verifier/json/dump.js";
import { isObject, member } from "../../../src/verifier/json/value.js";
import { parseRevocationDocument } from "../../../src/verifier/revocations/document.js";
import { verifyVerificationReceipt } from "../../../src/verifier/verification-receipt/index.js";
import {
  BUNDLE_MANIFESTS,
  type BundleManifest,
  corpusBytes,
  corpusManifest,
  corpusValue,
  type HostileIndex,
} from "../../support/corpus.js";
import { L, le32, leToBigint, P } from "../../support/ed25519-numbers.js";

const sodiumCrypto = loadSodiumCrypto().crypto;
assert.ok(sodiumCrypto !== null, "sodium-native loads on the platforms receiptd is tested on");
const IMPLEMENTATIONS: readonly VerifierCrypto[] = [sodiumCrypto, nodeCrypto, nobleCrypto];

const { Point } = ed25519;

const hex = (text: string) => Uint8Array.from(Buffer.from(text, "hex"));
const concat = (...parts: Uint8Array[]) => Uint8Array.from(Buffer.concat(parts));
const utf8 = (text: string) => Uint8Array.from(Buffer.from(text, "utf8"));

/** k = SHA-512(R ‖ A ‖ M) mod L over the bytes as given. */
function challenge(r: Uint8Array, a: Uint8Array, message: Uint8Array): bigint {
  return leToBigint(sha512(concat(r, a, message))) % L;
}

/** A signature `R ‖ S` with S = r + k·a for a private scalar `a` whose public key is `a·B + torsion`. */
function signWithScalar(scalar: bigint, publicKey: Uint8Array, nonce: bigint, message: Uint8Array) {
  const r = Point.BASE.multiply(nonce).toBytes();
  const k = challenge(r, publicKey, message);
  const s = (nonce + k * scalar) % L;
  return { signature: concat(r, le32(s)), k };
}

/** The first message "<prefix> <i>" whose challenge satisfies `wanted`. */
function findMessage(
  prefix: string,
  wanted: (k: bigint) => boolean,
  challengeOf: (message: Uint8Array) => bigint,
): Uint8Array {
  for (let i = 0; ; i++) {
    const message = utf8(`${prefix} ${i}`);
    if (wanted(challengeOf(message))) return message;
  }
}

interface Ed25519Case {
  name: string;
  publicKey: Uint8Array;
  message: Uint8Array;
  signature: Uint8Array;
  /** OpenSSL's answer. */
  valid: boolean;
}

function ed25519Cases(): Ed25519Case[] {
  const cases: Ed25519Case[] = [];
  // RFC 8032 §7.1, TEST 1 and TEST 2.
  const rfcKey1 = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  const rfcSig1 = hex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
  );
  const rfcKey2 = hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
  const rfcSig2 = hex(
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
  );
  cases.push(
    {
      name: "RFC 8032 test 1",
      publicKey: rfcKey1,
      message: hex(""),
      signature: rfcSig1,
      valid: true,
    },
    {
      name: "RFC 8032 test 2",
      publicKey: rfcKey2,
      message: hex("72"),
      signature: rfcSig2,
      valid: true,
    },
    {
      name: "another message",
      publicKey: rfcKey2,
      message: hex("73"),
      signature: rfcSig2,
      valid: false,
    },
    {
      name: "another key",
      publicKey: rfcKey1,
      message: hex("72"),
      signature: rfcSig2,
      valid: false,
    },
  );

  const s1 = leToBigint(rfcSig1.subarray(32));
  const r1 = rfcSig1.subarray(0, 32);
  cases.push(
    {
      name: "non-canonical S (S + L)",
      publicKey: rfcKey1,
      message: hex(""),
      signature: concat(r1, le32(s1 + L)),
      valid: false,
    },
    {
      name: "S = L",
      publicKey: rfcKey1,
      message: hex(""),
      signature: concat(r1, le32(L)),
      valid: false,
    },
    {
      name: "S with the top bits set",
      publicKey: rfcKey1,
      message: hex(""),
      signature: concat(r1, le32(s1 | (0xe0n << 248n))),
      valid: false,
    },
  );

  // The identity as a key (small order): [k]A vanishes, so R = [S]B verifies any message.
  const identity = le32(1n);
  const s = 12345n;
  const rOfS = Point.BASE.multiply(s).toBytes();
  cases.push({
    name: "small-order key (the identity), R = [S]B",
    publicKey: identity,
    message: utf8("anything"),
    signature: concat(rOfS, le32(s)),
    valid: true,
  });
  const identitySignBit = le32(1n | (1n << 255n));
  cases.push({
    name: "key x = 0 with the sign bit set",
    publicKey: identitySignBit,
    message: utf8("anything"),
    signature: concat(rOfS, le32(s)),
    valid: true,
  });
  const identityNonCanonical = le32(P + 1n);
  cases.push({
    name: "non-canonical key encoding (y = p + 1), hashed as given",
    publicKey: identityNonCanonical,
    message: utf8("anything"),
    signature: concat(rOfS, le32(s)),
    valid: true,
  });
  // S = 0 and the identity key: R' = [0]B - [k]A is the identity, encoded 01 00 … 00.
  cases.push(
    {
      name: "canonical R of the identity, S = 0",
      publicKey: identity,
      message: utf8("zero"),
      signature: concat(le32(1n), le32(0n)),
      valid: true,
    },
    {
      name: "non-canonical R (y = p + 1 for the identity)",
      publicKey: identity,
      message: utf8("zero"),
      signature: concat(le32(P + 1n), le32(0n)),
      valid: false,
    },
    {
      name: "R with the sign bit set on x = 0",
      publicKey: identity,
      message: utf8("zero"),
      signature: concat(le32(1n | (1n << 255n)), le32(0n)),
      valid: false,
    },
  );

  // The point of order 2, (0, -1): [k]A vanishes exactly when k is even. The cofactored
  // equation (noble's verify, ZIP-215) accepts both.
  const order2 = le32(P - 1n);
  const order2Challenge = (message: Uint8Array) => challenge(rOfS, order2, message);
  cases.push(
    {
      name: "order-2 key, even challenge",
      publicKey: order2,
      message: findMessage("order 2", (k) => k % 2n === 0n, order2Challenge),
      signature: concat(rOfS, le32(s)),
      valid: true,
    },
    {
      name: "order-2 key, odd challenge (cofactored equation would accept)",
      publicKey: order2,
      message: findMessage("order 2", (k) => k % 2n === 1n, order2Challenge),
      signature: concat(rOfS, le32(s)),
      valid: false,
    },
  );

  // A mixed-order key: a·B plus a point of order 8. The honest S = r + k·a verifies without
  // the cofactor only when [k]T vanishes, i.e. when 8 divides k.
  const scalar = 0x1234567890abcdefn;
  const torsion = Point.fromHex(ED25519_TORSION_SUBGROUP[1]!);
  assert.ok(torsion.multiplyUnsafe(8n).is0() && !torsion.multiplyUnsafe(4n).is0());
  const mixed = Point.BASE.multiply(scalar).add(torsion).toBytes();
  const nonce = 0xfeedn;
  const rNonce = Point.BASE.multiply(nonce).toBytes();
  const mixedChallenge = (message: Uint8Array) => challenge(rNonce, mixed, message);
  const divisible = findMessage("mixed", (k) => k % 8n === 0n, mixedChallenge);
  const notDivisible = findMessage("mixed", (k) => k % 8n !== 0n, mixedChallenge);
  cases.push(
    {
      name: "mixed-order key, 8 | k",
      publicKey: mixed,
      message: divisible,
      signature: signWithScalar(scalar, mixed, nonce, divisible).signature,
      valid: true,
    },
    {
      name: "mixed-order key, 8 ∤ k (cofactored equation would accept)",
      publicKey: mixed,
      message: notDivisible,
      signature: signWithScalar(scalar, mixed, nonce, notDivisible).signature,
      valid: false,
    },
  );

  // R of small order with an ordinary key: S = k·a makes R' = [S]B − [k]A the identity, so
  // R = 01 00 … 00 verifies (libsodium alone refuses any small-order R) and its non-canonical
  // encoding y = p + 1 does not (OpenSSL compares bytes).
  const ordinary = Point.BASE.multiply(scalar).toBytes();
  const identityR = le32(1n);
  const kIdentity = challenge(identityR, ordinary, utf8("identity R"));
  const identityRNonCanonical = le32(P + 1n);
  const kNonCanonical = challenge(identityRNonCanonical, ordinary, utf8("identity R"));
  cases.push(
    {
      name: "R = the identity with an ordinary key, S = k·a",
      publicKey: ordinary,
      message: utf8("identity R"),
      signature: concat(identityR, le32((kIdentity * scalar) % L)),
      valid: true,
    },
    {
      name: "R = the identity encoded as y = p + 1, S = k·a",
      publicKey: ordinary,
      message: utf8("identity R"),
      signature: concat(identityRNonCanonical, le32((kNonCanonical * scalar) % L)),
      valid: false,
    },
  );

  // Bytes that are no point: the first y whose x² has no square root.
  let notAPoint: Uint8Array = new Uint8Array();
  for (let y = 2n; ; y++) {
    try {
      Point.fromBytes(le32(y), true);
    } catch {
      notAPoint = le32(y);
      break;
    }
  }
  cases.push(
    {
      name: "a key that is no point",
      publicKey: notAPoint,
      message: hex(""),
      signature: rfcSig1,
      valid: false,
    },
    {
      name: "a key that is no point, with the identity's R = [S]B",
      publicKey: notAPoint,
      message: utf8("anything"),
      signature: concat(rOfS, le32(s)),
      valid: false,
    },
    {
      name: "a 63-byte signature",
      publicKey: rfcKey1,
      message: hex(""),
      signature: rfcSig1.subarray(0, 63),
      valid: false,
    },
  );
  return cases;
}

const CASES = ed25519Cases();

function verifyWith(crypto: VerifierCrypto, c: Ed25519Case): boolean {
  const verifier = crypto.ed25519Verifier(c.publicKey);
  assert.ok(verifier !== null, "every 32-byte string is accepted as a key");
  return verifier(c.message, c.signature);
}

for (const crypto of IMPLEMENTATIONS) {
  describe(`crypto contract: ${crypto.name}`, () => {
    test("SHA-256, SHA-1 and RIPEMD-160 of known inputs", () => {
      const abc = utf8("abc");
      assert.equal(
        Buffer.from(crypto.digest("sha256", abc)).toString("hex"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      );
      assert.equal(
        Buffer.from(crypto.digest("sha1", abc)).toString("hex"),
        "a9993e364706816aba3e25717850c26c9cd0d89d",
      );
      assert.equal(
        Buffer.from(crypto.digest("ripemd160", abc)).toString("hex"),
        "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc",
      );
      assert.equal(
        Buffer.from(crypto.digest("sha256", new Uint8Array())).toString("hex"),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      );
    });

    test("sha256Hex hashes text as UTF-8 and bytes as they are", () => {
      for (const text of ["", "abc", "é ü ∑ 😀", "\u2028"]) {
        assert.equal(
          crypto.sha256Hex(text),
          Buffer.from(crypto.digest("sha256", utf8(text))).toString("hex"),
        );
      }
      // A lone surrogate is written as U+FFFD by both UTF-8 encoders.
      assert.equal(crypto.sha256Hex("a\ud800b"), crypto.sha256Hex("a\ufffdb"));
      assert.equal(
        crypto.sha256Hex(utf8("abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      );
    });

    for (const c of CASES) {
      test(`Ed25519: ${c.name} → ${c.valid ? "accepted" : "refused"}`, () => {
        assert.equal(verifyWith(crypto, c), c.valid);
      });
    }
  });
}

test("the implementations agree on 300 signatures with one bit flipped", () => {
  let accepted = 0;
  for (let i = 0; i < 60; i++) {
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    const raw = publicKey.export({ format: "der", type: "spki" }).subarray(12);
    const message = Buffer.from(`message ${i} `.repeat(i));
    const signature = sign(null, message, privateKey);
    const variants: [Uint8Array, Uint8Array, Uint8Array][] = [[raw, message, signature]];
    for (const [target, at] of [
      ["signature", i % 32],
      ["signature", 32 + (i % 32)],
      ["key", i % 32],
      ["message", 0],
    ] as const) {
      const key = Uint8Array.from(raw);
      const msg = Uint8Array.from(Buffer.concat([message, Buffer.from("x")]));
      const sig = Uint8Array.from(signature);
      if (target === "signature") sig[at]! ^= 1 << (i % 8);
      if (target === "key") key[at]! ^= 1 << (i % 8);
      variants.push([key, target === "message" ? msg : message, sig]);
    }
    for (const [key, msg, sig] of variants) {
      const answers = IMPLEMENTATIONS.map((crypto) => crypto.ed25519Verifier(key)!(msg, sig));
      assert.deepEqual(
        answers,
        IMPLEMENTATIONS.map(() => answers[0]),
        `variant of signature ${i}`,
      );
      if (answers[0]) accepted++;
    }
  }
  assert.equal(accepted, 60, "only the untouched signatures verify");
});

describe("the verifier under each implementation", () => {
  const original = verifierCrypto();
  after(() => setVerifierCrypto(original));

  for (const crypto of IMPLEMENTATIONS) {
    test(`${crypto.name}: did:key signatures, the corpus and the OTS fixture`, () => {
      setVerifierCrypto(crypto);
      assert.equal(verifierCrypto(), crypto);

      // Through the did:key cache: a switch must not reuse the other implementation's keys.
      const c = CASES.find(
        (entry) => entry.name === "order-2 key, odd challenge (cofactored equation would accept)",
      )!;
      const did = publicKeyToDidKey(c.publicKey);
      assert.equal(verifyEd25519(did, c.message, b64uEncode(c.signature)), false);

      let bundles = 0;
      for (const manifestPath of BUNDLE_MANIFESTS) {
        for (const vector of corpusManifest<BundleManifest>(manifestPath).vectors) {
          const result = verifyBundleBytes(corpusBytes(`vectors/${vector.file}`), {
            requireAnchor: vector.require_anchor,
            universalNewlines: true,
          });
          assert.equal(
            dumpJson(result, { indent: 2 }),
            dumpJson(corpusValue(`expected/vectors/${vector.file}`), { indent: 2 }),
            vector.file,
          );
          bundles++;
        }
      }
      assert.equal(bundles, 77);

      const receipts = corpusManifest<{
        vectors: { file: string; bundle_file?: string; revocations_file?: string }[];
      }>("vectors/verification/manifest.json").vectors;
      for (const entry of receipts) {
        const dir = "vectors/verification/";
        const result = verifyVerificationReceipt(corpusValue(dir + entry.file), {
          bundle:
            entry.bundle_file === undefined ? undefined : corpusBytes(dir + entry.bundle_file),
          revocations:
            entry.revocations_file === undefined
              ? undefined
              : parseRevocationDocument(corpusBytes(dir + entry.revocations_file)),
        });
        assert.equal(
          dumpJson(result, { indent: 2 }),
          dumpJson(corpusValue(`expected/verification/${entry.file}`), { indent: 2 }),
          entry.file,
        );
      }
      assert.equal(receipts.length, 21);

      const hostile = corpusManifest<HostileIndex>("hostile/index.json").cases;
      for (const entry of hostile) {
        const result = verifyBundleBytes(corpusBytes(`hostile/${entry.file}`), {
          universalNewlines: true,
        });
        const expected = corpusValue(`hostile/${entry.expected_file}`);
        assert.ok(isObject(expected));
        assert.equal(
          dumpJson(result, { indent: 2 }),
          dumpJson(member(expected, "result"), { indent: 2 }),
          entry.case,
        );
      }
      assert.equal(hostile.length, 208);

      const headers = JSON.parse(corpusBytes("vectors/anchor/headers.json").toString()) as {
        headers: Record<string, string>;
      };
      const anchor = verifyProof(
        corpusBytes("vectors/anchor/hello-world.txt.ots"),
        crypto.sha256Hex(corpusBytes("vectors/anchor/hello-world.txt")),
        new Map([[358391, headers.headers["358391"]!]]),
      );
      assert.equal(anchor.status, "verified");
      assert.equal(anchor.confirmed?.block_height, 358391);
    });
  }
});
