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
import { type RawSignature, signaturesOf } from "./fixtures.js";
import type {
  CeilingImplementation,
  CeilingMeasurement,
  MinimalVerifier,
  MinimalVerifierSample,
} from "./types.js";

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

/**
 * This thread's CPU seconds (user + system) from /proc/thread-self, or null where Linux's
 * /proc is missing: a shared machine stretches wall time, not CPU time (docs/benchmarks.md).
 */
const THREAD_CPU = `
const threadCpu = () => {
  try {
    const stat = require("node:fs").readFileSync("/proc/thread-self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
};
`;

const VERIFY_LOOP = `
const { parentPort, workerData } = require("node:worker_threads");
${THREAD_CPU}
PREPARE
const pass = () => { for (const s of prepared) if (!check(s)) throw new Error("bad signature"); };
const warmUntil = performance.now() + workerData.warmupMs;
while (performance.now() < warmUntil) pass();
let verifications = 0;
const cpuBefore = threadCpu();
const start = performance.now();
const end = start + workerData.durationMs;
while (performance.now() < end) { pass(); verifications += prepared.length; }
const cpuAfter = threadCpu();
const seconds = (performance.now() - start) / 1000;
parentPort.postMessage({
  verifications,
  seconds,
  cpuSeconds: cpuBefore === null || cpuAfter === null ? seconds : cpuAfter - cpuBefore,
});
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
        new Promise<LoopRun>((resolve, reject) => {
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
  const verifications = runs.reduce((sum, run) => sum + run.verifications, 0);
  const cpuSeconds = runs.reduce((sum, run) => sum + run.cpuSeconds, 0);
  return {
    implementation,
    threads,
    verificationsPerSecond,
    bundlesPerSecond: verificationsPerSecond / signatures.length,
    signaturesPerBundle: signatures.length,
    ...(verifications === 0
      ? {}
      : { cpuMicrosPerVerification: (cpuSeconds * 1e6) / verifications }),
  };
}

interface LoopRun {
  verifications: number;
  seconds: number;
  cpuSeconds: number;
}

/**
 * Issue 33's "minimal verifier": what a verification service needs at the least, on every
 * core: JSON.parse of the bundle, each receipt's sorted-key canonical bytes (without `sig`),
 * their SHA-256 (the receipt's digest, which the chain links by) and libsodium's Ed25519 over
 * them. Issuer keys are decoded once, before the loop (a Map lookup per receipt), which only
 * makes this bar stricter. No HTTP, no threads hand-off, no rules, no verdict.
 */
const MINIMAL_LOOP = `
const { parentPort, workerData } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const sodium = require(workerData.sodiumPath);
${THREAD_CPU}
const keys = new Map(workerData.keys.map(([id, key]) => [id, Buffer.from(key)]));
const bundles = workerData.bundles.map((bytes) => Buffer.from(bytes));
// JCS for the values a receipt holds: members sorted by UTF-16 code units (the default sort),
// ECMAScript number and string forms (JSON.stringify's).
const canonical = (value, omit) => {
  if (Array.isArray(value)) return "[" + value.map((item) => canonical(item)).join(",") + "]";
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const names = Object.keys(value).filter((name) => name !== omit).sort();
  return "{" + names.map((name) => JSON.stringify(name) + ":" + canonical(value[name])).join(",") + "}";
};
const verify = (bytes) => {
  const bundle = JSON.parse(bytes.toString("utf8"));
  for (const receipt of bundle.receipts) {
    const message = Buffer.from(canonical(receipt, "sig"), "utf8");
    createHash("sha256").update(message).digest();
    const key = keys.get(receipt.issuer.id);
    const signature = Buffer.from(receipt.sig.value, "base64url");
    if (key === undefined || !sodium.crypto_sign_verify_detached(signature, message, key)) {
      throw new Error("bad signature");
    }
  }
};
let next = 0;
const one = () => verify(bundles[next++ % bundles.length]);
const warmUntil = performance.now() + workerData.warmupMs;
while (performance.now() < warmUntil) one();
let verified = 0;
const cpuBefore = threadCpu();
const start = performance.now();
const end = start + workerData.durationMs;
while (performance.now() < end) { one(); verified++; }
const cpuAfter = threadCpu();
const seconds = (performance.now() - start) / 1000;
parentPort.postMessage({
  verified,
  seconds,
  cpuSeconds: cpuBefore === null || cpuAfter === null ? seconds : cpuAfter - cpuBefore,
});
`;

/**
 * One measurement of the minimal verifier (MINIMAL_LOOP) on `threads` threads, over
 * `bundles` in turn: its throughput and its CPU per bundle.
 */
export async function measureMinimalVerifier(
  bundles: readonly Uint8Array[],
  durationMs: number,
  threads = availableParallelism(),
): Promise<MinimalVerifierSample> {
  const warmupMs = Math.min(500, durationMs / 3);
  const sodiumPath = createRequire(import.meta.url).resolve("sodium-native");
  const keys = new Map<string, Uint8Array>();
  for (const bundle of bundles) {
    for (const signature of signaturesOf(bundle)) {
      keys.set(signature.issuerId, signature.publicKeyDer.subarray(SPKI_PREFIX_BYTES));
    }
  }
  const runs = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<{ verified: number; seconds: number; cpuSeconds: number }>(
          (resolve, reject) => {
            const worker = new Worker(MINIMAL_LOOP, {
              eval: true,
              workerData: {
                bundles: bundles.map((bundle) => Uint8Array.from(bundle)),
                keys: [...keys],
                warmupMs,
                durationMs,
                sodiumPath,
              },
            });
            worker.once("message", resolve);
            worker.once("error", reject);
          },
        ),
    ),
  );
  const verified = runs.reduce((sum, run) => sum + run.verified, 0);
  const cpuSeconds = runs.reduce((sum, run) => sum + run.cpuSeconds, 0);
  return {
    threads,
    bundlesPerSecond: runs.reduce((sum, run) => sum + run.verified / run.seconds, 0),
    cpuMicrosPerBundle: verified === 0 ? Number.POSITIVE_INFINITY : (cpuSeconds * 1e6) / verified,
  };
}

/**
 * The minimal verifier over a run: its samples (before, between and after the scenarios),
 * the highest throughput and the lowest CPU per bundle among them — the bar receiptd is held to.
 */
export function minimalVerifierOf(samples: readonly MinimalVerifierSample[]): MinimalVerifier {
  return {
    samples: [...samples],
    bundlesPerSecond: Math.max(...samples.map((sample) => sample.bundlesPerSecond)),
    cpuMicrosPerBundle: Math.min(...samples.map((sample) => sample.cpuMicrosPerBundle)),
  };
}
