/**
 * The library's single-thread throughput (the public `verifyBundleBytes`) of this build next to
 * another build of receiptd, in one process, alternating: 02_happy_full.json, and one pass over
 * the corpus's 77 bundle vectors. Both builds' results must be byte-identical; the ratios are
 * this build's bundles/s over the other's. Alternating rounds in one process keep the two under
 * the same load, which matters on a shared machine.
 *
 *   npm run build && node dist/bench/compare-library.js <other checkout, built> [--seconds N] [--rounds N]
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { verifyBundleBytes } from "../src/verifier/bundle/verify-document.js";
import { verifierCrypto } from "../src/verifier/crypto/provider.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { seconds: { type: "string" }, rounds: { type: "string" } },
});
const other = positionals[0];
if (other === undefined) {
  console.error(
    "usage: node dist/bench/compare-library.js <other checkout> [--seconds N] [--rounds N]",
  );
  process.exit(2);
}
const seconds = Number(values.seconds ?? 2);
const rounds = Number(values.rounds ?? 3);
const repoRoot = new URL(
  import.meta.url.includes("/dist/bench/") ? "../../" : "../",
  import.meta.url,
);
const corpus = new URL("../shared/corpus/", repoRoot);

type Verify = typeof verifyBundleBytes;
const otherModule = (await import(
  pathToFileURL(join(resolve(other), "dist/src/verifier/bundle/verify-document.js")).href
)) as { verifyBundleBytes: Verify };
const builds: { name: string; verify: Verify }[] = [
  { name: resolve(other), verify: otherModule.verifyBundleBytes },
  { name: "this build", verify: verifyBundleBytes },
];

interface Vector {
  bytes: Buffer;
  options: { requireAnchor: boolean; universalNewlines: boolean };
}
const vectors: Vector[] = [];
for (const manifest of [
  "vectors/manifest.json",
  "vectors/manifest-0.5.json",
  "vectors/manifest-0.6.json",
]) {
  const { vectors: entries } = JSON.parse(readFileSync(new URL(manifest, corpus), "utf8")) as {
    vectors: { file: string; require_anchor: boolean }[];
  };
  for (const entry of entries) {
    vectors.push({
      bytes: readFileSync(new URL(`vectors/${entry.file}`, corpus)),
      options: { requireAnchor: entry.require_anchor, universalNewlines: true },
    });
  }
}
const happy = readFileSync(new URL("vectors/02_happy_full.json", corpus));

// The same answers first: a faster build that answers otherwise is no result.
for (const vector of [
  ...vectors,
  { bytes: happy, options: { requireAnchor: false, universalNewlines: true } },
]) {
  const [a, b] = builds.map((build) => JSON.stringify(build.verify(vector.bytes, vector.options)));
  if (a !== b) throw new Error("the two builds answer a vector differently");
}

/**
 * Bundles per second of `pass` (which verifies `bundles` bundles) over `seconds` of wall time,
 * and per second of the process's CPU time: on a shared machine the second moves much less.
 */
function rate(pass: () => void, bundles: number): { wall: number; cpu: number } {
  const warmUntil = performance.now() + 300;
  while (performance.now() < warmUntil) pass();
  let count = 0;
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  while (performance.now() - start < seconds * 1000) {
    pass();
    count += bundles;
  }
  const cpu = process.cpuUsage(cpuStart);
  return {
    wall: count / ((performance.now() - start) / 1000),
    cpu: count / ((cpu.user + cpu.system) / 1e6),
  };
}

const workloads = [
  { name: "02_happy_full.json", bundles: 1, pass: (verify: Verify) => verify(happy) },
  {
    name: `one pass over the ${vectors.length} vectors`,
    bundles: vectors.length,
    pass: (verify: Verify) => {
      for (const vector of vectors) verify(vector.bytes, vector.options);
    },
  },
];

console.log(
  `library, one thread, ${rounds} alternating rounds of ${seconds}s (node ${process.version})`,
);
console.log(`this build's Ed25519: ${verifierCrypto().name}`);
console.log(`other build: ${builds[0]!.name}`);
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
for (const workload of workloads) {
  const figures: { wall: number; cpu: number }[][] = builds.map(() => []);
  for (let round = 0; round < rounds; round++) {
    builds.forEach((build, i) => {
      figures[i]!.push(rate(() => workload.pass(build.verify), workload.bundles));
    });
  }
  const [before, after] = figures as [(typeof figures)[0], (typeof figures)[0]];
  for (const measure of ["wall", "cpu"] as const) {
    const b = before.map((f) => Math.round(f[measure]));
    const a = after.map((f) => Math.round(f[measure]));
    const ratios = b.map((x, i) => a[i]! / x);
    console.log(
      `${workload.name}, bundles per ${measure === "wall" ? "second" : "CPU second"}: other ${b.join(", ")}; this ${a.join(", ")}; ratios ${ratios.map((r) => r.toFixed(2)).join(", ")} (median ${median(ratios).toFixed(2)})`,
    );
  }
}
