/**
 * The in-process crypto ceiling: the bench bundle's own Ed25519 signatures verified in a
 * tight loop on one worker thread per core, with keys imported once. No service can verify
 * these bundles faster on this machine, so every scenario is also reported as a share of it.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { RawSignature } from "./fixtures.js";
import type { CeilingMeasurement } from "./types.js";

// Plain JavaScript evaluated in each thread, so it runs the same from bench/ and dist/bench/.
const VERIFY_LOOP = `
const { parentPort, workerData } = require("node:worker_threads");
const { createPublicKey, verify } = require("node:crypto");
const signatures = workerData.signatures.map((s) => ({
  key: createPublicKey({ key: Buffer.from(s.publicKeyDer), format: "der", type: "spki" }),
  message: Buffer.from(s.message),
  signature: Buffer.from(s.signature),
}));
const pass = () => { for (const s of signatures) if (!verify(null, s.message, s.key, s.signature)) throw new Error("bad signature"); };
const warmUntil = performance.now() + workerData.warmupMs;
while (performance.now() < warmUntil) pass();
let verifications = 0;
const start = performance.now();
const end = start + workerData.durationMs;
while (performance.now() < end) { pass(); verifications += signatures.length; }
parentPort.postMessage({ verifications, seconds: (performance.now() - start) / 1000 });
`;

export async function measureCeiling(
  signatures: RawSignature[],
  durationMs: number,
  threads = availableParallelism(),
): Promise<CeilingMeasurement> {
  const warmupMs = Math.min(500, durationMs / 3);
  const runs = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<{ verifications: number; seconds: number }>((resolve, reject) => {
          const worker = new Worker(VERIFY_LOOP, {
            eval: true,
            workerData: { signatures, warmupMs, durationMs },
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
    threads,
    verificationsPerSecond,
    bundlesPerSecond: verificationsPerSecond / signatures.length,
    signaturesPerBundle: signatures.length,
  };
}
