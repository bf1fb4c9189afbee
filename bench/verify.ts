/**
 * Single-thread verifier throughput next to the bare signature ceiling.
 *
 * For each bundle it measures `verifyBundleBytes` (parse + verify, the whole job) and a bare
 * loop of libsodium Ed25519 verifications over the same signatures (what the verifier uses),
 * with OpenSSL's loop (node:crypto, pre-imported keys: the fallback) beside it. The ratio to
 * the libsodium loop is the share of the verifier's time spent in signature checks.
 *
 *   npm run bench:verify [-- --quick] [-- --seconds N]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { verifyBundleBytes } from "../src/verifier/bundle/verify-document.js";
import { verifierCrypto } from "../src/verifier/crypto/provider.js";
import { measureCeiling } from "./ceiling.js";
import { generatedBundle, signaturesOf } from "./fixtures.js";

const { values } = parseArgs({
  options: { quick: { type: "boolean", default: false }, seconds: { type: "string" } },
});
const seconds = Number(values.seconds ?? (values.quick ? 0.3 : 3));
// The same file runs from bench/ (tsx) and from dist/bench/ (npm run bench:verify).
const repoRoot = new URL(
  import.meta.url.includes("/dist/bench/") ? "../../" : "../",
  import.meta.url,
);
const corpus = new URL("../shared/corpus/", repoRoot);

/** Calls `fn` repeatedly for `seconds` (after a warm-up) and returns calls per second. */
function rate(fn: () => void): number {
  const warmUntil = performance.now() + Math.min(500, seconds * 300);
  while (performance.now() < warmUntil) fn();
  let calls = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  while (performance.now() < end) {
    fn();
    calls++;
  }
  return calls / ((performance.now() - start) / 1000);
}

interface Row {
  bundle: string;
  receipts: number;
  verifierPerSecond: number;
  /** libsodium's loop over the same signatures. */
  ceilingPerSecond: number;
  opensslCeilingPerSecond: number;
  ratio: number;
}

async function measure(name: string, bytes: Uint8Array): Promise<Row> {
  const signatures = signaturesOf(bytes);
  const result = verifyBundleBytes(bytes);
  if (result.verdict !== "TRUSTED") throw new Error(`${name} did not verify: ${result.verdict}`);
  const verifierPerSecond = rate(() => verifyBundleBytes(bytes));
  // The same loops as `npm run bench`'s ceiling, on one thread: bundles/s of signatures alone.
  const ceilingPerSecond = (await measureCeiling(signatures, seconds * 1000, 1)).bundlesPerSecond;
  const opensslCeilingPerSecond = (await measureCeiling(signatures, seconds * 1000, 1, "openssl"))
    .bundlesPerSecond;
  return {
    bundle: name,
    receipts: signatures.length,
    verifierPerSecond,
    ceilingPerSecond,
    opensslCeilingPerSecond,
    ratio: verifierPerSecond / ceilingPerSecond,
  };
}

const rows = [
  await measure("02_happy_full.json", readFileSync(new URL("vectors/02_happy_full.json", corpus))),
  await measure("generated 50-receipt", generatedBundle(50)),
];

const format = (n: number) => n.toFixed(0).padStart(10);
console.log(`single-thread verification, ${seconds}s per measurement (node ${process.version})`);
console.log(`Ed25519: ${verifierCrypto().name}`);
console.log(
  "bundle                  receipts  verifier/s  libsodium-only/s  openssl-only/s  in signatures",
);
for (const row of rows) {
  console.log(
    `${row.bundle.padEnd(22)} ${String(row.receipts).padStart(9)} ${format(row.verifierPerSecond)}  ${format(row.ceilingPerSecond)}        ${format(row.opensslCeilingPerSecond)}      ${(row.ratio * 100).toFixed(1).padStart(6)}%`,
  );
}
const resultsDir = fileURLToPath(new URL("bench/results/", repoRoot));
mkdirSync(resultsDir, { recursive: true });
writeFileSync(
  `${resultsDir}verify.json`,
  `${JSON.stringify({ node: process.version, seconds, rows }, null, 2)}\n`,
);
