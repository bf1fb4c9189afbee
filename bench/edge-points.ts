/**
 * Ed25519 edge points (issue 32, finding 1): what a signature with a small-order R costs next
 * to an ordinary one, each under a key never seen before (a fresh verifier per key, as a
 * bundle of distinct did:keys forces), and the whole 1 MiB attack bundle
 * (`support/edge-point-bundle.ts`). "before" is the routing this replaced: libsodium, then the
 * OpenSSL provider (`node.ts`), which on Node 24 hands the input to noble with a table per
 * key; "now" is `sodium-edges.ts`. Times are CPU time of this process. With `--nodes`, the same measurements run under each Node
 * binary in turn, in one run, and print side by side.
 *
 *   node --import tsx bench/edge-points.ts [--nodes /path/node20,/path/node24] [--keys 200]
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import sodium from "sodium-native";
import { verifyBundleBytes } from "../src/verifier/bundle/verify-document.js";
import { isSmallOrderEncoding } from "../src/verifier/crypto/edge-points.js";
import { nodeCrypto } from "../src/verifier/crypto/node.js";
import { platformCrypto } from "../src/verifier/crypto/platform.js";
import {
  type Ed25519Verifier,
  setVerifierCrypto,
  type VerifierCrypto,
} from "../src/verifier/crypto/provider.js";
import { edgePointBundle, SMALL_ORDER_SIGNATURE } from "./support/edge-point-bundle.js";

const { values } = parseArgs({
  options: {
    nodes: { type: "string" },
    keys: { type: "string", default: "200" },
    child: { type: "boolean", default: false },
  },
});
const keyCount = Number(values.keys);

/** The libsodium provider as it was: OpenSSL's provider for edge keys and small-order R. */
const before: VerifierCrypto = {
  ...platformCrypto,
  ed25519Verifier(publicKey) {
    if (isSmallOrderEncoding(publicKey)) return nodeCrypto.ed25519Verifier(publicKey);
    const key = Buffer.from(publicKey);
    let openssl: Ed25519Verifier | null | undefined;
    return (message, signature) => {
      if (sodium.crypto_sign_verify_detached(signature, message, key)) return true;
      if (!isSmallOrderEncoding(signature)) return false;
      openssl ??= nodeCrypto.ed25519Verifier(key);
      return openssl?.(message, signature) ?? false;
    };
  },
};

const HIGH_Y_KEY = Buffer.from(
  "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "hex",
);
const ORDER_8_KEY = Buffer.from(
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "hex",
);

interface Input {
  key: Buffer;
  message: Buffer;
  signature: Buffer;
}

function inputs(kind: "ordinary" | "R = identity, S = 0" | "R = identity, S random"): Input[] {
  return Array.from({ length: keyCount }, (_, i) => {
    const key = Buffer.alloc(32);
    const secretKey = Buffer.alloc(64);
    sodium.crypto_sign_seed_keypair(key, secretKey, Buffer.alloc(32, `${kind} ${i}`));
    const message = Buffer.from(`receipt ${i} of the edge-point bench`);
    const signature = Buffer.alloc(64);
    if (kind === "ordinary") sodium.crypto_sign_detached(signature, message, secretKey);
    else SMALL_ORDER_SIGNATURE.copy(signature);
    if (kind === "R = identity, S random") {
      const wide = createHash("sha512").update(`S ${i}`).digest();
      sodium.crypto_core_ed25519_scalar_reduce(signature.subarray(32), wide);
    }
    return { key, message, signature };
  });
}

/**
 * This process's CPU time in ms (user + system): on a shared machine wall-clock time moves
 * with the neighbours' load, CPU time much less.
 */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** µs of CPU per signature, a fresh verifier per key; the median of `passes` passes over the keys. */
function perSignature(crypto: VerifierCrypto, cases: Input[], passes: number): number {
  const times: number[] = [];
  for (let pass = 0; pass < passes; pass++) {
    const started = cpuMs();
    for (const { key, message, signature } of cases)
      crypto.ed25519Verifier(key)?.(message, signature);
    times.push(((cpuMs() - started) * 1000) / cases.length);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

/** ms of CPU for the whole bundle, every key new to the did:key cache (a switch empties it). */
function bundleMs(crypto: VerifierCrypto, bytes: Uint8Array): number {
  setVerifierCrypto(crypto === before ? platformCrypto : before);
  setVerifierCrypto(crypto);
  const started = performance.now();
  const result = verifyBundleBytes(bytes);
  if (result.verdict !== "UNTRUSTED")
    throw new Error(`the attack bundle verified: ${result.verdict}`);
  return performance.now() - started;
}

/**
 * Signatures under one edge key, its verifier made once (as the did:key cache keeps it): a
 * y ≥ p key (y − p = 3, one of the 20 that decode) and a key of order 8, each with honest-
 * looking R = [s]B, S = s, and a random message.
 */
function edgeKeyCases(key: Buffer): Input[] {
  return Array.from({ length: keyCount }, (_, i) => {
    const s = Buffer.alloc(32);
    sodium.crypto_core_ed25519_scalar_reduce(s, createHash("sha512").update(`s ${i}`).digest());
    const r = Buffer.alloc(32);
    sodium.crypto_scalarmult_ed25519_base_noclamp(r, s);
    return { key, message: Buffer.from(`message ${i}`), signature: Buffer.concat([r, s]) };
  });
}

function perSignatureOneKey(crypto: VerifierCrypto, cases: Input[], passes: number): number {
  const verifier = crypto.ed25519Verifier(cases[0]!.key)!;
  const times: number[] = [];
  for (let pass = 0; pass < passes; pass++) {
    const started = cpuMs();
    for (const { message, signature } of cases) verifier(message, signature);
    times.push(((cpuMs() - started) * 1000) / cases.length);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

function child(): void {
  const ordinary = inputs("ordinary");
  const zeroS = inputs("R = identity, S = 0");
  const randomS = inputs("R = identity, S random");
  const bundle = edgePointBundle();
  const receipts = (
    Buffer.from(bundle)
      .toString()
      .match(/"receipt_id"/g) ?? []
  ).length;
  const rows: [string, string][] = [
    [
      `ordinary signature (µs, ${keyCount} keys)`,
      perSignature(platformCrypto, ordinary, 5).toFixed(1),
    ],
    ["edge: R = identity, S = 0, now", perSignature(platformCrypto, zeroS, 5).toFixed(1)],
    ["edge: R = identity, S random, now", perSignature(platformCrypto, randomS, 5).toFixed(1)],
    [
      "edge: y ≥ p key (y = p + 3), one verifier, now",
      perSignatureOneKey(platformCrypto, edgeKeyCases(HIGH_Y_KEY), 3).toFixed(1),
    ],
    [
      "edge: key of order 8, one verifier, now",
      perSignatureOneKey(platformCrypto, edgeKeyCases(ORDER_8_KEY), 3).toFixed(1),
    ],
    ["edge: R = identity, S = 0, before", perSignature(before, zeroS.slice(0, 50), 1).toFixed(1)],
    [
      `1 MiB bundle, ${receipts} edge signatures (ms), now`,
      bundleMs(platformCrypto, bundle).toFixed(0),
    ],
    [`1 MiB bundle, ${receipts} edge signatures (ms), before`, bundleMs(before, bundle).toFixed(0)],
  ];
  console.log(JSON.stringify({ node: process.version, openssl: process.versions.openssl, rows }));
}

function parent(): void {
  const nodes = values.nodes?.split(",") ?? [process.execPath];
  const script = fileURLToPath(import.meta.url);
  const results = nodes.map((node) => {
    const run = spawnSync(
      node,
      ["--import", "tsx", script, "--child", "--keys", String(keyCount)],
      {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    if (run.status !== 0) throw new Error(`${node} failed`);
    return JSON.parse(run.stdout.trim().split("\n").at(-1)!) as {
      node: string;
      openssl: string;
      rows: [string, string][];
    };
  });
  const width = Math.max(...results[0]!.rows.map(([name]) => name.length));
  console.log(
    `${"".padEnd(width)}  ${results.map((r) => `${r.node} (OpenSSL ${r.openssl})`.padStart(26)).join("  ")}`,
  );
  for (const [i, [name]] of results[0]!.rows.entries()) {
    console.log(
      `${name.padEnd(width)}  ${results.map((r) => r.rows[i]![1].padStart(26)).join("  ")}`,
    );
  }
}

if (values.child) child();
else parent();
