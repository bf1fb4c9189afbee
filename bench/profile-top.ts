/**
 * The top self-time frames of V8 CPU profiles (`.cpuprofile`, from `node --cpu-prof` or
 * `npm run bench -- --profile DIR`), as a Markdown table: what a thread spends its own time in,
 * without opening DevTools, so before/after profiles can be put side by side in a document.
 *
 *   node dist/bench/profile-top.js [--top N] [--skip S] [--under PATH] FILE.cpuprofile ...
 *
 * `--skip S` leaves out each profile's first S seconds: a served process's startup (module
 * loading, compiling), which is not the per-request cost the profile is taken for.
 * Several files are summed (e.g. the profiles of several runs of one build). A frame is a
 * function at a place (name, file, line); the file is shown relative to `--under` (default the
 * working directory) or to node_modules. `(idle)` and `(program)` are counted in the total but
 * listed like any other frame, so a mostly idle thread says so.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FrameTime {
  frame: string;
  selfMicros: number;
}

/** Self time of every frame of `profile` after its first `skipMicros`, in µs, by frame label. */
export function selfTimes(profile: CpuProfile, under: string, skipMicros = 0): Map<string, number> {
  const labels = new Map<number, string>();
  for (const node of profile.nodes) labels.set(node.id, frameLabel(node.callFrame, under));
  const times = new Map<string, number>();
  // Sample i's time is the delta to the next sample (the last one's is not known: dropped).
  let elapsed = 0;
  for (let i = 0; i + 1 < profile.samples.length; i++) {
    elapsed += profile.timeDeltas[i] ?? 0;
    if (elapsed < skipMicros) continue;
    const label = labels.get(profile.samples[i]!) ?? "(unknown)";
    const micros = profile.timeDeltas[i + 1] ?? 0;
    times.set(label, (times.get(label) ?? 0) + micros);
  }
  return times;
}

function frameLabel(frame: ProfileNode["callFrame"], under: string): string {
  const name = frame.functionName === "" ? "(anonymous)" : frame.functionName;
  if (frame.url === "") return name;
  const path = frame.url.startsWith("file://") ? fileURLToPath(frame.url) : frame.url;
  const modules = path.lastIndexOf("node_modules/");
  const shown =
    modules >= 0
      ? path.slice(modules + "node_modules/".length)
      : path.startsWith("/")
        ? relative(under, path)
        : path;
  return `${name} ${shown}:${frame.lineNumber + 1}`;
}

/** The `top` frames by self time over all `profiles`, and the total. */
export function topFrames(
  profiles: readonly CpuProfile[],
  top: number,
  under: string,
  skipMicros = 0,
): { frames: FrameTime[]; totalMicros: number } {
  const sum = new Map<string, number>();
  for (const profile of profiles) {
    for (const [label, micros] of selfTimes(profile, under, skipMicros)) {
      sum.set(label, (sum.get(label) ?? 0) + micros);
    }
  }
  let totalMicros = 0;
  for (const micros of sum.values()) totalMicros += micros;
  const frames = [...sum]
    .map(([frame, selfMicros]) => ({ frame, selfMicros }))
    .sort((a, b) => b.selfMicros - a.selfMicros)
    .slice(0, top);
  return { frames, totalMicros };
}

/** A Markdown table of `frames`, with each one's share of the busy (non-idle) time. */
export function renderTopFrames(frames: FrameTime[], totalMicros: number, idleMicros = 0): string {
  const busy = Math.max(1, totalMicros - idleMicros);
  const lines = ["| # | self ms | % of busy | frame |", "|---:|---:|---:|---|"];
  for (const [i, { frame, selfMicros }] of frames.entries()) {
    const share = frame === "(idle)" ? "—" : `${((100 * selfMicros) / busy).toFixed(1)}%`;
    lines.push(
      `| ${i + 1} | ${(selfMicros / 1000).toFixed(0)} | ${share} | \`${frame.replaceAll("|", "\\|")}\` |`,
    );
  }
  return lines.join("\n");
}

function main(): number {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: "string", default: "15" },
      skip: { type: "string", default: "0" },
      under: { type: "string", default: process.cwd() },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help || positionals.length === 0) {
    console.log("usage: profile-top [--top N] [--skip SECONDS] [--under PATH] FILE.cpuprofile ...");
    return values.help ? 0 : 2;
  }
  const top = Number(values.top);
  if (!Number.isSafeInteger(top) || top < 1) {
    console.error(`--top must be a whole number ≥ 1, got '${values.top}'`);
    return 2;
  }
  const profiles = positionals.map((file) => JSON.parse(readFileSync(file, "utf8")) as CpuProfile);
  // Idle is excluded from the shares, so they say where the thread's work goes.
  const skipMicros = Number(values.skip) * 1e6;
  if (!(skipMicros >= 0)) {
    console.error(`--skip must be a number of seconds ≥ 0, got '${values.skip}'`);
    return 2;
  }
  const all = topFrames(profiles, Number.MAX_SAFE_INTEGER, values.under, skipMicros);
  const idle = all.frames.find((f) => f.frame === "(idle)")?.selfMicros ?? 0;
  const { frames, totalMicros } = topFrames(profiles, top, values.under, skipMicros);
  console.log(
    `${positionals.length} profile(s), ${(totalMicros / 1000).toFixed(0)} ms sampled, ${((totalMicros - idle) / 1000).toFixed(0)} ms busy\n`,
  );
  console.log(renderTopFrames(frames, totalMicros, idle));
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = main();
}
