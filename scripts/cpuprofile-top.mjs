#!/usr/bin/env node
/**
 * The top N self-time frames of a V8 `.cpuprofile` (`node --cpu-prof`, or a worker thread's
 * profile from the inspector): self time summed per function (name, file, line), so a function
 * that appears under several callers counts once, with its share of the sampled time.
 *
 *   node scripts/cpuprofile-top.mjs <file.cpuprofile> [--top N]
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "15" } },
});
if (positionals.length !== 1) {
  console.error("usage: node scripts/cpuprofile-top.mjs <file.cpuprofile> [--top N]");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(positionals[0], "utf8"));
const top = Number(values.top);

// Each sample names the node that was on top of the stack; the time to the next sample is its.
const selfMicros = new Map();
const { samples, timeDeltas } = profile;
for (let i = 0; i < samples.length; i++) {
  const delta = timeDeltas[i + 1] ?? 0;
  selfMicros.set(samples[i], (selfMicros.get(samples[i]) ?? 0) + delta);
}
const byFrame = new Map();
let total = 0;
for (const node of profile.nodes) {
  const micros = selfMicros.get(node.id) ?? 0;
  total += micros;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${basename(url)}:${lineNumber + 1}` : "";
  const key = `${functionName || "(anonymous)"} ${where}`.trim();
  byFrame.set(key, (byFrame.get(key) ?? 0) + micros);
}
const rows = [...byFrame].sort((a, b) => b[1] - a[1]).slice(0, top);
console.log(`${(total / 1000).toFixed(0)} ms sampled in ${positionals[0]}`);
console.log("   self ms  share  frame");
for (const [frame, micros] of rows) {
  console.log(
    `${(micros / 1000).toFixed(1).padStart(10)} ${((micros / total) * 100).toFixed(1).padStart(5)}%  ${frame}`,
  );
}
