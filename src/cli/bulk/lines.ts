/**
 * One output line of `receiptd verify` in bulk: `{source, verdict, error_codes}` (plus
 * `result`, the whole verdict payload, with `--full`), compact JSON ending in `\n`. Local
 * and remote runs write the same line for the same input; an input that could not be read
 * has `verdict: null` and `error` instead.
 */
import { dumpCompact } from "../../verifier/json/dump.js";

/** What a line is made from: the verdict payload, local or remote. */
export interface LineResult {
  verdict: string;
  errors: readonly { code: string }[];
}

/** Per-verdict and per-code counts of the lines written. */
export interface Tally {
  verdicts: Record<string, number>;
  codes: Record<string, number>;
  unreadable: number;
}

export function emptyTally(): Tally {
  return { verdicts: {}, codes: {}, unreadable: 0 };
}

export function addTally(into: Tally, from: Tally): void {
  for (const [verdict, count] of Object.entries(from.verdicts)) {
    into.verdicts[verdict] = (into.verdicts[verdict] ?? 0) + count;
  }
  for (const [code, count] of Object.entries(from.codes)) {
    into.codes[code] = (into.codes[code] ?? 0) + count;
  }
  into.unreadable += from.unreadable;
}

/** The line for `result`, counted into `tally`. */
export function resultLine(
  source: string,
  result: LineResult,
  full: boolean,
  tally: Tally,
): string {
  const codes = result.errors.map((error) => error.code);
  tally.verdicts[result.verdict] = (tally.verdicts[result.verdict] ?? 0) + 1;
  for (const code of codes) tally.codes[code] = (tally.codes[code] ?? 0) + 1;
  const head = `{"source":${JSON.stringify(source)},"verdict":${JSON.stringify(result.verdict)},"error_codes":${JSON.stringify(codes)}`;
  return full ? `${head},"result":${dumpCompact(result)}}\n` : `${head}}\n`;
}

/** The line of an input that has no result (`unreadable: …`, a refusal of the service). */
export function failureLine(source: string, error: string, tally: Tally): string {
  tally.unreadable += 1;
  return `{"source":${JSON.stringify(source)},"verdict":null,"error_codes":[],"error":${JSON.stringify(error)}}\n`;
}
