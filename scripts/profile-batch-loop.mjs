// The worker's job for a 50-bundle batch (answerVerifyRequest), in a loop, for profiling, and
// its CPU per bundle against the libsodium loop over the same signatures.
import { pathToFileURL } from "node:url";

const root = process.argv[2];
const seconds = Number(process.argv[3] ?? 8);
const imp = (p) => import(pathToFileURL(`${root}/${p}`).href);
const { answerVerifyRequest } = await imp("dist/src/service/verification/answer.js");
const { generatedBundle, batchBody } = await imp("dist/bench/fixtures.js");
const body = batchBody(Array.from({ length: 50 }, (_, i) => generatedBundle(6, 100 + i)));
const context = { maxBatch: 50, maxResultBytes: 1 << 20, signer: () => null };
const flags = { requireAnchor: false, receipt: false };
const end = performance.now() + seconds * 1000;
let n = 0;
const cpu0 = process.cpuUsage();
while (performance.now() < end) {
  const out = answerVerifyRequest(new Uint8Array(body), flags, context);
  if (out.statusCode !== 200) throw new Error(JSON.stringify(out));
  n++;
}
const cpu = process.cpuUsage(cpu0);
console.log(`${n} batches, ${((cpu.user + cpu.system) / (n * 50)).toFixed(0)} µs CPU per bundle`);
