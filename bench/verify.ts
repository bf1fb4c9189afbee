/**
 * Single-thread verifier throughput next to the bare signature ceiling.
 *
 * For each bundle it measures `verifyBundleBytes` (parse + verify, the whole job) and a bare
 * loop of node:crypto Ed25519 verifications over the same signatures with pre-imported keys.
 * Their ratio is the share of the verifier's time spent in signature checks: the target is
 * ≥ 85% (≥ 1,100 six-receipt bundles/s per core on the reference 2-core machine).
 *
 *   npm run bench:verify [-- --quick] [-- --seconds N]
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { verifyBundleBytes } from "../src/verifier/bundle/verify-document.js";
import { didKeyToPublicKey } from "../src/verifier/crypto/did-key.js";
import { signerFromSeed } from "../src/verifier/crypto/ed25519.js";
import { canonicalBytes } from "../src/verifier/json/canonical.js";
import { dumpCompact } from "../src/verifier/json/dump.js";
import { parseJson } from "../src/verifier/json/parse.js";
import { isArray, isObject, type JsonObject, member } from "../src/verifier/json/value.js";
import { BundleBuilder } from "../src/verifier/producer/index.js";
import { formatUtcSeconds } from "../src/verifier/timestamps.js";

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

/** A realistic long task: a pass, 24 decision/execution pairs, a termination. */
function generatedBundle(receiptCount: number): Uint8Array {
  const agent = signerFromSeed(Buffer.alloc(32, 7));
  const builder = new BundleBuilder("continuity-receipt/0.4", "urn:uuid:bench-task");
  const at = (i: number) => formatUtcSeconds(new Date(Date.UTC(2026, 0, 1, 0, 0, i)));
  builder.append({
    type: "session.pass.created",
    signer: agent,
    issuedAt: at(0),
    body: {
      gate_id: "gate-1",
      mandala_class: "gate-lite",
      quotas: { tool_calls: 1000 },
      expires_at: "2026-12-31T00:00:00Z",
      policy_version: "2026-01-01.1",
      mandate_ref: `sha256:${"ab".repeat(32)}`,
      agent_id: agent.did,
      spend_cap: { minor: 100000, currency: "USD" },
    },
  });
  for (let i = 1; i < receiptCount - 1; i++) {
    const decision = i % 2 === 1;
    builder.append({
      type: decision ? "task.decision" : "task.execution",
      signer: agent,
      issuedAt: at(i),
      body: decision
        ? {
            action: "tool.call",
            action_args_hash: `sha256:${"cd".repeat(32)}`,
            model: "model-x",
            input_provenance: { observed_sources_hash: `sha256:${"ef".repeat(32)}` },
            decision: "allow",
            policy_version: "2026-01-01.1",
          }
        : {
            tool_calls: [{ name: "search", args_hash: `sha256:${"01".repeat(32)}` }],
            egress: [],
            resources: { cpu_ms: 120 },
            sandbox_class: "landlock",
          },
    });
  }
  builder.append({
    type: "task.termination",
    signer: agent,
    issuedAt: at(receiptCount - 1),
    body: { reason: "completed", limits_at_stop: {}, remaining: {} },
  });
  return Buffer.from(dumpCompact(builder.build()));
}

interface Signature {
  key: KeyObject;
  message: Buffer;
  signature: Buffer;
}

const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

function signaturesOf(bytes: Uint8Array): Signature[] {
  const bundle = parseJson(bytes);
  const receipts = isObject(bundle) ? member(bundle, "receipts") : null;
  if (!isArray(receipts)) throw new Error("not a bundle");
  return receipts.filter(isObject).map((receipt: JsonObject) => {
    const issuer = member(receipt, "issuer") as JsonObject;
    const sig = member(receipt, "sig") as JsonObject;
    return {
      key: createPublicKey({
        key: Buffer.concat([SPKI_PREFIX, didKeyToPublicKey(member(issuer, "id") as string)]),
        format: "der",
        type: "spki",
      }),
      message: canonicalBytes(receipt, "sig"),
      signature: Buffer.from(member(sig, "value") as string, "base64url"),
    };
  });
}

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
  ceilingPerSecond: number;
  ratio: number;
}

function measure(name: string, bytes: Uint8Array): Row {
  const signatures = signaturesOf(bytes);
  const result = verifyBundleBytes(bytes);
  if (result.verdict !== "TRUSTED") throw new Error(`${name} did not verify: ${result.verdict}`);
  const verifierPerSecond = rate(() => verifyBundleBytes(bytes));
  const ceilingPerSecond = rate(() => {
    for (const { key, message, signature } of signatures) verify(null, message, key, signature);
  });
  return {
    bundle: name,
    receipts: signatures.length,
    verifierPerSecond,
    ceilingPerSecond,
    ratio: verifierPerSecond / ceilingPerSecond,
  };
}

const rows = [
  measure("02_happy_full.json", readFileSync(new URL("vectors/02_happy_full.json", corpus))),
  measure("generated 50-receipt", generatedBundle(50)),
];

const format = (n: number) => n.toFixed(0).padStart(10);
console.log(`single-thread verification, ${seconds}s per measurement (node ${process.version})`);
console.log("bundle                  receipts  verifier/s  ed25519-only/s  in signatures");
for (const row of rows) {
  console.log(
    `${row.bundle.padEnd(22)} ${String(row.receipts).padStart(9)} ${format(row.verifierPerSecond)}  ${format(row.ceilingPerSecond)}      ${(row.ratio * 100).toFixed(1).padStart(6)}%`,
  );
}
const resultsDir = fileURLToPath(new URL("bench/results/", repoRoot));
mkdirSync(resultsDir, { recursive: true });
writeFileSync(
  `${resultsDir}verify.json`,
  `${JSON.stringify({ node: process.version, seconds, rows }, null, 2)}\n`,
);
