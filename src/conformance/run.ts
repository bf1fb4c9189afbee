/**
 * Building a conformance submission by running a verifier's command-line tools over the
 * corpus (verifier.md §9.3, what `tools/conformance_submit.py` does): the bundle CLI over every
 * bundle vector (with `--require-anchor` where the manifest says so) and every hostile input,
 * the receipt CLI over every verification-receipt vector (with its `--bundle` and
 * `--revocations` files). Calls run a few at a time, each with a time limit; whatever a call
 * printed is turned into an entry by the same rules as the reference's recorded outputs.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { JsonObject, JsonValue } from "../verifier/json/value.js";
import {
  bundleAnswer,
  hostileAnswer,
  parseVerifierOutput,
  receiptAnswer,
  type VerifierOutcome,
} from "./answers.js";
import type { Corpus, Section } from "./corpus.js";

/** An executable and the arguments that come before a vector's own. */
export interface VerifierCli {
  command: string;
  args: readonly string[];
}

export interface RunSettings {
  corpusDir: string;
  corpus: Corpus;
  /** Hostile case label → input file relative to `corpusDir` (needed when hostile_inputs is deployed). */
  hostileFiles: ReadonlyMap<string, string>;
  /** `continuity-receipt-verify`'s contract: `<bundle> [--require-anchor]`. */
  bundleCli: VerifierCli;
  /** `continuity-receipt-verify-receipt`'s: `<receipt> [--bundle P] [--revocations P]`. */
  receiptCli: VerifierCli;
  implementation: JsonObject;
  /** Calls running at once. */
  concurrency: number;
  /** A call still running after this long is killed and answers nothing usable. */
  timeoutMs: number;
}

/** A call whose answer could not be read; graded as whatever it printed (usually a mismatch). */
export interface CallProblem {
  section: Section;
  id: string;
  problem: string;
}

export interface SubmissionRun {
  submission: JsonObject;
  calls: number;
  problems: CallProblem[];
}

/** More than any result of the corpus prints by orders of magnitude. */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

interface CallResult extends VerifierOutcome {
  /** Why the call gave no usable answer, when it did not. */
  problem?: string;
}

/** Runs one verifier call: its exit code and stdout, killed at the time or output limit. */
export function callVerifier(
  cli: VerifierCli,
  args: readonly string[],
  timeoutMs: number,
): Promise<CallResult> {
  return new Promise((resolve) => {
    const child = spawn(cli.command, [...cli.args, ...args], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let problem: string | undefined;
    const stop = (why: string) => {
      problem ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => stop(`timed out after ${timeoutMs / 1000} s`), timeoutMs);
    child.stdout.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT_BYTES) stop(`printed more than ${MAX_OUTPUT_BYTES} bytes`);
      else chunks.push(chunk);
    });
    let settled = false;
    const finish = (exitCode: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (problem !== undefined) {
        resolve({ exitCode: null, output: undefined, problem });
        return;
      }
      const output = parseVerifierOutput(Buffer.concat(chunks));
      resolve({
        exitCode,
        output,
        ...(output === undefined ? { problem: `printed no JSON (exit ${exitCode})` } : {}),
      });
    };
    child.once("error", (error) => {
      problem ??= `could not be started: ${error.message}`;
      finish(null);
    });
    child.once("close", (code) => finish(code));
  });
}

/** Runs `tasks` with at most `concurrency` in flight; results in task order. */
async function inPool<T>(tasks: readonly (() => Promise<T>)[], concurrency: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]!();
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(concurrency, tasks.length)) }, worker),
  );
  return results;
}

interface PlannedCall {
  section: Section;
  id: string;
  cli: VerifierCli;
  args: string[];
  answer: (outcome: VerifierOutcome) => JsonValue;
}

function plan(settings: RunSettings): { calls: PlannedCall[]; problems: CallProblem[] } {
  const { corpusDir, corpus, bundleCli, receiptCli, hostileFiles } = settings;
  const calls: PlannedCall[] = [];
  const problems: CallProblem[] = [];
  for (const vector of corpus.bundles?.vectors ?? []) {
    calls.push({
      section: "bundles",
      id: vector.id,
      cli: bundleCli,
      args: [
        join(corpusDir, "vectors", vector.id),
        ...(vector.requireAnchor ? ["--require-anchor"] : []),
      ],
      answer: ({ output }) => bundleAnswer(output),
    });
  }
  const receiptDir = join(corpusDir, "vectors", "verification");
  for (const vector of corpus.verification_receipts?.vectors ?? []) {
    calls.push({
      section: "verification_receipts",
      id: vector.id,
      cli: receiptCli,
      args: [
        join(receiptDir, vector.id),
        ...(vector.bundleFile === null ? [] : ["--bundle", join(receiptDir, vector.bundleFile)]),
        ...(vector.revocationsFile === null
          ? []
          : ["--revocations", join(receiptDir, vector.revocationsFile)]),
      ],
      answer: ({ output }) => receiptAnswer(output),
    });
  }
  for (const vector of corpus.hostile_inputs?.vectors ?? []) {
    const file = hostileFiles.get(vector.id);
    if (file === undefined) {
      problems.push({
        section: "hostile_inputs",
        id: vector.id,
        problem: "no input file for this case in hostile/index.json",
      });
      continue;
    }
    calls.push({
      section: "hostile_inputs",
      id: vector.id,
      cli: bundleCli,
      args: [join(corpusDir, file)],
      answer: hostileAnswer,
    });
  }
  return { calls, problems };
}

/** Runs the verifier over every deployed section and assembles the submission. */
export async function runConformance(settings: RunSettings): Promise<SubmissionRun> {
  const { calls, problems } = plan(settings);
  const outcomes = await inPool(
    calls.map((call) => () => callVerifier(call.cli, call.args, settings.timeoutMs)),
    settings.concurrency,
  );
  // Every deployed section is present, even when empty, so the referee grades it as answered
  // (a section without answers is graded as missing vectors, not refused).
  const results = new Map<string, JsonValue>();
  for (const section of ["bundles", "verification_receipts", "hostile_inputs"] as const) {
    if (settings.corpus[section] !== undefined) results.set(section, new Map());
  }
  calls.forEach((call, index) => {
    const outcome = outcomes[index]!;
    if (outcome.problem !== undefined) {
      problems.push({ section: call.section, id: call.id, problem: outcome.problem });
    }
    (results.get(call.section) as JsonObject).set(call.id, call.answer(outcome));
  });
  const submission = new Map<string, JsonValue>([
    ["implementation", settings.implementation],
    ["results", results],
  ]);
  return { submission, calls: calls.length, problems };
}
