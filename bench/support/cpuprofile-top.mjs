// Top self-time frames of a .cpuprofile (docs/benchmarks/2026-11-29-settlements.md): node bench/support/cpuprofile-top.mjs FILE [N]
import { readFileSync } from "node:fs";

const p = JSON.parse(readFileSync(process.argv[2], "utf8"));
const n = Number(process.argv[3] ?? 15);
const byId = new Map(p.nodes.map((x) => [x.id, x]));
const self = new Map();
const dt = p.timeDeltas;
let total = 0;
for (let i = 0; i < p.samples.length; i++) {
  const node = byId.get(p.samples[i]);
  const t = dt[i] ?? 0;
  total += t;
  const cf = node.callFrame;
  const file = cf.url
    .replace(/^.*\/(dist|node_modules)\//, "$1/")
    .replace(/^file:\/\/.*\/settle(-before)?\//, "");
  const key = `${cf.functionName || "(anonymous)"} ${file ? file.split("/").slice(-2).join("/") + ":" + (cf.lineNumber + 1) : ""}`;
  self.set(key, (self.get(key) ?? 0) + t);
}
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, n);
console.log(`total ${(total / 1000).toFixed(0)} ms`);
for (const [k, v] of rows)
  console.log(
    `${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`,
  );
