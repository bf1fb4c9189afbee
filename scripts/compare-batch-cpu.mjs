// Worker CPU per bundle of answerVerifyRequest on a 50-bundle batch (6 receipts each), two
// builds alternating in one process, against libsodium's CPU per bundle over the same signatures.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [a, b] = [process.argv[2], process.argv[3]];
const rounds = Number(process.argv[4] ?? 5);
const seconds = Number(process.argv[5] ?? 2);
const imp = (root, p) => import(pathToFileURL(`${root}/${p}`).href);
const builds = [];
for (const root of [a, b])
  builds.push({
    root,
    answer: (await imp(root, "dist/src/service/verification/answer.js")).answerVerifyRequest,
  });
const { generatedBundle, batchBody, signaturesOf } = await imp(b, "dist/bench/fixtures.js");
const bundles = Array.from({ length: 50 }, (_, i) => generatedBundle(6, 100 + i));
const body = batchBody(bundles);
const sigs = bundles
  .flatMap((x) => signaturesOf(x))
  .map((s) => ({ pk: s.publicKeyDer.subarray(12), m: s.message, sig: s.signature }));
const sodium = createRequire(`${b}/package.json`)("sodium-native");
const context = { maxBatch: 50, maxResultBytes: 1 << 20, signer: () => null };
const flags = { requireAnchor: false, receipt: false };
const outs = builds.map((x) => {
  const o = x.answer(new Uint8Array(body), flags, context);
  return Buffer.from(o.json).toString("hex");
});
if (outs[0] !== outs[1]) throw new Error("answers differ");
function cpuPerBundle(fn, bundlesPerCall) {
  const warm = performance.now() + 300;
  while (performance.now() < warm) fn();
  let n = 0;
  const c0 = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    fn();
    n += bundlesPerCall;
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}
const sigLoop = () => {
  for (const s of sigs)
    if (!sodium.crypto_sign_verify_detached(s.sig, s.m, s.pk)) throw new Error("bad");
};
const rows = { sig: [], [a]: [], [b]: [] };
for (let r = 0; r < rounds; r++) {
  rows.sig.push(cpuPerBundle(sigLoop, 50));
  for (const x of builds)
    rows[x.root].push(cpuPerBundle(() => x.answer(new Uint8Array(body), flags, context), 50));
}
const med = (l) => [...l].sort((p, q) => p - q)[Math.floor(l.length / 2)];
console.log(
  `libsodium only: ${rows.sig.map((x) => x.toFixed(0)).join(", ")} µs CPU per bundle (median ${med(rows.sig).toFixed(0)})`,
);
for (const x of builds) {
  const ratios = rows[x.root].map((v, i) => v / rows.sig[i]);
  console.log(
    `${x.root}: ${rows[x.root].map((v) => v.toFixed(0)).join(", ")} µs; ÷ signatures ${ratios.map((v) => v.toFixed(2)).join(", ")} (median ${med(ratios).toFixed(2)})`,
  );
}
