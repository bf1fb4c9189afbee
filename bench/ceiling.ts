/**
 * The in-process crypto ceiling: the bench bundle's own Ed25519 signatures verified in a
 * tight loop on one worker thread per core, with keys prepared once. No service can verify
 * these bundles faster on this machine, so every scenario is also reported as a share of it.
 *
 * The ceiling is libsodium's (`crypto_sign_verify_detached`), what the service verifies with;
 * OpenSSL's (`node:crypto` with imported keys, the fallback) is measured beside it.
 */
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { RawSignature } from "./fixtures.js";
import type { CeilingImplementation, CeilingMeasurement } from "./types.js";

/** DER SubjectPublicKeyInfo prefix of an Ed25519 key: the 32 raw bytes follow. */
const SPKI_PREFIX_BYTES = 12;

// Plain JavaScript evaluated in each thread, so it runs the same from bench/ and dist/bench/.
const PREPARE: Record<CeilingImplementation, string> = {
  openssl: `
const { createPublicKey, verify } = require("node:crypto");
const prepared = workerData.signatures.map((s) => ({
  key: createPublicKey({ key: Buffer.from(s.publicKeyDer), format: "der", type: "spki" }),
  message: Buffer.from(s.message),
  signature: Buffer.from(s.signature),
}));
const check = (s) => verify(null, s.message, s.key, s.signature);
`,
  libsodium: `
const sodium = require(workerData.sodiumPath);
const prepared = workerData.signatures.map((s) => ({
  key: Buffer.from(s.publicKeyDer).subarray(${SPKI_PREFIX_BYTES}),
  message: Buffer.from(s.message),
  signature: Buffer.from(s.signature),
}));
const check = (s) => sodium.crypto_sign_verify_detached(s.signature, s.message, s.key);
`,
};

const VERIFY_LOOP = `
const { parentPort, workerData } = require("node:worker_threads");
PREPARE
const pass = () => { for (const s of prepared) if (!check(s)) throw new Error("bad signature"); };
const warmUntil = performance.now() + workerData.warmupMs;
while (performance.now() < warmUntil) pass();
let verifications = 0;
const start = performance.now();
const end = start + workerData.durationMs;
while (performance.now() < end) { pass(); verifications += prepared.length; }
parentPort.postMessage({ verifications, seconds: (performance.now() - start) / 1000 });
`;

export async function measureCeiling(
  signatures: RawSignature[],
  durationMs: number,
  threads = availableParallelism(),
  implementation: CeilingImplementation = "libsodium",
): Promise<CeilingMeasurement> {
  const warmupMs = Math.min(500, durationMs / 3);
  const sodiumPath = createRequire(import.meta.url).resolve("sodium-native");
  const code = VERIFY_LOOP.replace("PREPARE", PREPARE[implementation]);
  const runs = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<{ verifications: number; seconds: number }>((resolve, reject) => {
          const worker = new Worker(code, {
            eval: true,
            workerData: { signatures, warmupMs, durationMs, sodiumPath },
          });
          worker.once("message", resolve);
          worker.once("error", reject);
        }),
    ),
  );
  const verificationsPerSecond = runs.reduce(
    (sum, run) => sum + run.verifications / run.seconds,
    0,
  );
  return {
    implementation,
    threads,
    verificationsPerSecond,
    bundlesPerSecond: verificationsPerSecond / signatures.length,
    signaturesPerBundle: signatures.length,
  };
}
