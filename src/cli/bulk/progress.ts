/**
 * The progress bar of a bulk run (cli-progress), on stderr and only when stderr is a
 * terminal: done/total when the total is known (files and directories), else the count;
 * rate, ETA and verdict counts. Nothing of it reaches a pipe or a file.
 */
import type { Tally } from "./lines.js";

export interface Progress {
  update(done: number, tally: Tally): void;
  stop(): void;
}

const NONE: Progress = { update: () => {}, stop: () => {} };

function counts(tally: Tally) {
  return {
    trusted: tally.verdicts.TRUSTED ?? 0,
    untrusted: tally.verdicts.UNTRUSTED ?? 0,
    provisional: tally.verdicts.PROVISIONAL ?? 0,
    insufficient: tally.verdicts.INSUFFICIENT_EVIDENCE ?? 0,
  };
}

export async function startProgress(
  stream: NodeJS.WriteStream,
  total: number | null,
  startedAt: number,
  alreadyDone: number,
): Promise<Progress> {
  if (!stream.isTTY) return NONE;
  // Loaded only for a terminal: a run into a pipe or a file carries none of it.
  const { default: cliProgress } = await import("cli-progress");
  const verdicts = "T {trusted} U {untrusted} P {provisional} I {insufficient}";
  const format =
    total === null
      ? `{value} bundles | {speed}/s | ${verdicts}`
      : `{bar} {value}/{total} | {speed}/s | ETA {eta_formatted} | ${verdicts}`;
  const bar = new cliProgress.SingleBar(
    { stream, format, hideCursor: true, fps: 5, etaBuffer: 200, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  const speed = (done: number) => {
    const seconds = (performance.now() - startedAt) / 1000;
    return seconds > 0 ? Math.round((done - alreadyDone) / seconds) : 0;
  };
  bar.start(total ?? 0, alreadyDone, {
    speed: 0,
    ...counts({ verdicts: {}, codes: {}, unreadable: 0 }),
  });
  return {
    update: (done, tally) => bar.update(done, { speed: speed(done), ...counts(tally) }),
    stop: () => bar.stop(),
  };
}
