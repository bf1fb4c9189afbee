/**
 * Issue 32's Node 24 payload (finding 1), for the benches that measure it: one bundle of up to
 * 1 MiB whose receipts are each signed by a distinct ordinary did:key, with every signature
 * replaced by a small-order R (`01 00 … 00`, the identity) and S = 0. Each signature is an
 * Ed25519 edge point: libsodium refuses it, and OpenSSL 3.0's answer (here: no, k ≠ 0) has to
 * be worked out, once per receipt, under a key never seen before. Deterministic: the keys come
 * from fixed seeds.
 */
import { createHash, generateKeyPairSync } from "node:crypto";
import sodium from "sodium-native";
import { publicKeyToDidKey } from "../../src/verifier/crypto/did-key.js";
import type { Ed25519Signer } from "../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { BundleBuilder } from "../../src/verifier/producer/index.js";

/** R = the identity's canonical encoding, S = 0: what every receipt carries as its signature. */
export const SMALL_ORDER_SIGNATURE = Buffer.concat([Buffer.from([1]), Buffer.alloc(63)]);

/**
 * Ordinary keys (a·B from a seed), each "signing" with the small-order signature: the attacker
 * never needed the private key, so none is used (the shared KeyObject is never asked).
 */
function forgers(count: number, variant: string): Ed25519Signer[] {
  const { privateKey } = generateKeyPairSync("ed25519");
  return Array.from({ length: count }, (_, i) => {
    const publicKey = Buffer.alloc(32);
    const secretKey = Buffer.alloc(64);
    const seed = createHash("sha256").update(`edge-point key ${variant} ${i}`).digest();
    sodium.crypto_sign_seed_keypair(publicKey, secretKey, seed);
    return {
      did: publicKeyToDidKey(publicKey),
      privateKey,
      sign: () => Buffer.from(SMALL_ORDER_SIGNATURE),
    };
  });
}

function build(signers: readonly Ed25519Signer[]): Uint8Array {
  // As small as a receipt gets while the verifier still checks its signature.
  const builder = new BundleBuilder("continuity-receipt/0.4", "t");
  for (const [i, signer] of signers.entries()) {
    builder.append({
      type: "task.execution",
      signer,
      issuedAt: "2026-01-01T00:00:00Z",
      body: {},
      receiptId: String(i),
      issuerKind: "a",
      // No chain: the attacker need not care that `prev` is wrong, and it saves 75 bytes.
      envelope: { prev: null },
    });
  }
  return Buffer.from(dumpCompact(builder.build()));
}

/**
 * The largest such bundle of at most `limitBytes` (default 1 MiB, the default body limit):
 * 2,431 receipts at 1 MiB (the attacker fit 2,761; what matters is that every
 * signature is checked under its own key). `variant` gives other keys.
 */
export function edgePointBundle(limitBytes = 1024 * 1024, variant = "a"): Uint8Array {
  const one = build(forgers(1, variant)).length;
  const perReceipt = build(forgers(2, variant)).length - one;
  const signers = forgers(Math.max(1, Math.floor((limitBytes - one) / perReceipt) + 1), variant);
  let bytes = build(signers);
  while (bytes.length > limitBytes && signers.length > 1) {
    signers.length -= Math.max(1, Math.ceil((bytes.length - limitBytes) / perReceipt));
    bytes = build(signers);
  }
  return bytes;
}
