// Library loop for profiling: 02_happy_full and the 77 vectors, for N seconds.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
const seconds = Number(process.argv[3] ?? 8);
const { verifyBundleBytes } = await import(
  pathToFileURL(`${root}/dist/src/verifier/bundle/verify-document.js`).href
);
const corpus = "/work/wt/shared/corpus/";
const vectors = [];
for (const m of ["manifest.json", "manifest-0.5.json", "manifest-0.6.json"]) {
  for (const e of JSON.parse(readFileSync(`${corpus}vectors/${m}`, "utf8")).vectors)
    vectors.push({
      bytes: readFileSync(`${corpus}vectors/${e.file}`),
      options: { requireAnchor: e.require_anchor, universalNewlines: true },
    });
}
const happy = readFileSync(`${corpus}vectors/02_happy_full.json`);
const end = performance.now() + seconds * 1000;
let n = 0;
while (performance.now() < end) {
  for (let i = 0; i < 20; i++) verifyBundleBytes(happy);
  for (const v of vectors) verifyBundleBytes(v.bytes, v.options);
  n++;
}
console.log(`${n} rounds`);
