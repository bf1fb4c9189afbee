/**
 * `receiptd conformance run`: builds a conformance submission by running a verifier's CLIs
 * (ours by default) over the corpus in CORPUS_DIR, has it graded (by a referee's
 * `POST /conformance`, or here by the referee's own code), checks the signed report offline
 * and prints a summary. Exit 0 only for a verified CONFORMANT report.
 */
import { constants } from "node:fs";
import { access, stat, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Corpus,
  CorpusError,
  type CorpusSummary,
  loadCorpus,
  loadHostileCaseFiles,
  MANIFEST_PATHS,
  SECTIONS,
  summarizeCorpus,
} from "../conformance/corpus.js";
import { SubmissionError } from "../conformance/grade.js";
import { refereeReport } from "../conformance/referee.js";
import { conformanceReportProblems } from "../conformance/report.js";
import { type CallProblem, runConformance, type VerifierCli } from "../conformance/run.js";
import type { Env } from "../io/env.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { sha256Digest } from "../verifier/crypto/digest.js";
import { generateSigner } from "../verifier/crypto/ed25519.js";
import { canonicalBytes, canonicalText } from "../verifier/json/canonical.js";
import { dumpCompact, dumpJson } from "../verifier/json/dump.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import {
  fromPlain,
  isArray,
  isObject,
  type JsonObject,
  type JsonValue,
} from "../verifier/json/value.js";
import { VERIFIER_VERSION } from "../verifier/version.js";
import { type CliIo, processIo } from "./entry.js";
import { CliUsageError, type ParsedLine, parseCommand, refuseArguments } from "./parse-command.js";

export const USAGE = `usage: receiptd conformance run [--cli PATH] [--receipt-cli PATH] [--corpus DIR]
                                [--referee URL] [--key KEY] [--name N] [--impl-version V]
                                [--language L] [--url U] [--concurrency N] [--timeout S]
                                [--report FILE] [--submission FILE]`;

const HELP = `${USAGE}

Runs a verifier over the conformance corpus and has the answers graded:

  --cli PATH          the bundle verifier, with continuity-receipt-verify's arguments and
                      exit codes (default: receiptd's own). A .js/.mjs/.cjs file runs with
                      node; anything else must be executable.
  --receipt-cli PATH  the verification-receipt verifier (continuity-receipt-verify-receipt's
                      contract); default: the sibling of --cli whose name has
                      continuity-receipt-verify-receipt in place of continuity-receipt-verify
  --corpus DIR        the corpus, laid out like ../shared/corpus (default: CORPUS_DIR)
  --referee URL       POST the submission to URL/conformance and check the report's issuer
                      against URL/info; without it the submission is graded here, by the
                      referee's own code, and the report is signed with a one-off key
  --key KEY           the referee's API key (sent as Authorization: Bearer)
  --name, --impl-version, --language, --url
                      the implementation named in the submission and the report
  --concurrency N     verifier calls at once (default: the number of cores)
  --timeout S         seconds a call may take before it is killed (default 60)
  --report FILE       also write the signed report there
  --submission FILE   also write the submission there

The report's signature is verified offline (Ed25519 over the canonical report minus sig, by
the did:key in issuer), as is its digest of the submission that was sent.
Exit status: 0 CONFORMANT and verified, 1 PARTIAL, NONCONFORMANT or a report that does not
verify, 2 usage, corpus, I/O or referee errors.
`;

/** Anything that stops the run before a report is in hand: exit 2. */
class RunError extends codedErrorClass("run_failed") {}

const DEFAULT_TIMEOUT_SECONDS = 60;
const REFEREE_TIMEOUT_MS = 120_000;
const LISTED_PER_SECTION = 5;
const BUNDLE_CLI = "continuity-receipt-verify";
const RECEIPT_CLI = "continuity-receipt-verify-receipt";

interface Options {
  cli: string | undefined;
  receiptCli: string | undefined;
  corpusDir: string;
  referee: URL | null;
  key: string | undefined;
  implementation: { name?: string; version?: string; language?: string; url?: string };
  concurrency: number;
  timeoutMs: number;
  reportFile: string | undefined;
  submissionFile: string | undefined;
}

function positive(text: string | undefined, flag: string, whole: boolean): number | undefined {
  if (text === undefined) return undefined;
  const value = text.trim() === "" ? Number.NaN : Number(text);
  if (!(value > 0) || !Number.isFinite(value) || (whole && !Number.isSafeInteger(value))) {
    throw new CliUsageError(`${flag} must be a ${whole ? "whole " : ""}number > 0, got '${text}'`);
  }
  return value;
}

/** The referee's base URL, ending in a slash so `conformance` and `info` resolve under it. */
function refereeUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CliUsageError(`--referee must be an http(s) URL, got '${text}'`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliUsageError(`--referee must be an http(s) URL, got '${text}'`);
  }
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  url.search = "";
  url.hash = "";
  return url;
}

const OPTIONS = {
  cli: { type: "string" },
  "receipt-cli": { type: "string" },
  corpus: { type: "string" },
  referee: { type: "string" },
  key: { type: "string" },
  name: { type: "string" },
  "impl-version": { type: "string" },
  language: { type: "string" },
  url: { type: "string" },
  concurrency: { type: "string" },
  timeout: { type: "string" },
  report: { type: "string" },
  submission: { type: "string" },
} as const;

function readOptions({ values, positionals }: ParsedLine<typeof OPTIONS, true>, env: Env): Options {
  const [action, ...extra] = positionals;
  if (action !== "run") throw new CliUsageError("the only command is run");
  refuseArguments(extra);
  const corpusDir = values.corpus ?? env.CORPUS_DIR;
  if (corpusDir === undefined || corpusDir === "") {
    throw new CliUsageError("no corpus: pass --corpus DIR or set CORPUS_DIR");
  }
  if (values.key !== undefined && values.referee === undefined) {
    throw new CliUsageError("--key is for a --referee");
  }
  return {
    cli: values.cli,
    receiptCli: values["receipt-cli"],
    corpusDir: resolve(corpusDir),
    referee: values.referee === undefined ? null : refereeUrl(values.referee),
    key: values.key,
    implementation: {
      ...(values.name === undefined ? {} : { name: values.name }),
      ...(values["impl-version"] === undefined ? {} : { version: values["impl-version"] }),
      ...(values.language === undefined ? {} : { language: values.language }),
      ...(values.url === undefined ? {} : { url: values.url }),
    },
    concurrency: positive(values.concurrency, "--concurrency", true) ?? availableParallelism(),
    timeoutMs: (positive(values.timeout, "--timeout", false) ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
    reportFile: values.report,
    submissionFile: values.submission,
  };
}

/** One of receiptd's own CLIs, run by this node (through tsx when running from source). */
function ownCli(name: string): VerifierCli {
  const fromSource = import.meta.url.endsWith(".ts");
  const script = fileURLToPath(new URL(`./${name}.${fromSource ? "ts" : "js"}`, import.meta.url));
  return {
    command: process.execPath,
    args: fromSource ? ["--import", "tsx", script] : [script],
  };
}

/** A CLI given by path: scripts run with node, anything else must be executable. */
async function givenCli(path: string, flag: string): Promise<VerifierCli> {
  const absolute = resolve(path);
  const isScript = /\.[cm]?js$/.test(absolute);
  try {
    if (!(await stat(absolute)).isFile()) throw new Error("not a file");
    await access(absolute, isScript ? constants.R_OK : constants.X_OK);
  } catch (error) {
    throw new CliUsageError(
      `${flag} ${path} cannot be run: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return isScript
    ? { command: process.execPath, args: [absolute] }
    : { command: absolute, args: [] };
}

async function verifierClis(options: Options, needReceipts: boolean) {
  if (options.cli === undefined) {
    const receiptCli =
      options.receiptCli === undefined
        ? ownCli(RECEIPT_CLI)
        : await givenCli(options.receiptCli, "--receipt-cli");
    return { bundleCli: ownCli(BUNDLE_CLI), receiptCli, own: true };
  }
  const bundleCli = await givenCli(options.cli, "--cli");
  let receiptPath = options.receiptCli;
  if (receiptPath === undefined && needReceipts) {
    const name = basename(options.cli);
    if (!name.includes(BUNDLE_CLI)) {
      throw new CliUsageError(
        `--receipt-cli is needed: ${name} has no ${BUNDLE_CLI} in its name to find the sibling by`,
      );
    }
    receiptPath = join(dirname(options.cli), name.replace(BUNDLE_CLI, RECEIPT_CLI));
  }
  // Without receipt vectors the receipt CLI is never called.
  const receiptCli =
    receiptPath === undefined ? bundleCli : await givenCli(receiptPath, "--receipt-cli");
  return { bundleCli, receiptCli, own: false };
}

function implementationOf(options: Options, own: boolean): JsonObject {
  const defaults = own
    ? { name: "receiptd", version: VERIFIER_VERSION, language: "typescript" }
    : { name: basename(options.cli ?? BUNDLE_CLI) };
  return new Map(Object.entries({ ...defaults, ...options.implementation }));
}

async function loadDeployedCorpus(corpusDir: string) {
  try {
    const corpus = await loadCorpus(corpusDir);
    if (corpus === null) throw new RunError(`${corpusDir}: no corpus manifest is there`);
    const hostileFiles =
      corpus.hostile_inputs === undefined
        ? new Map<string, string>()
        : await loadHostileCaseFiles(corpusDir);
    return { corpus, hostileFiles };
  } catch (error) {
    if (error instanceof CorpusError) throw new RunError(error.message);
    throw error;
  }
}

interface Graded {
  report: JsonValue;
  /** Who graded, for the summary. */
  grader: string;
  /** The issuer the report must name, when it is known. */
  expectedIssuer: string | null;
  warnings: string[];
}

function parseAnswer(text: string, from: string): JsonObject {
  try {
    const body = parseJson(Buffer.from(text, "utf8"));
    if (isObject(body)) return body;
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
  }
  throw new RunError(`${from} did not answer with a JSON object`);
}

async function gradeLocally(corpus: Corpus, submission: JsonObject): Promise<Graded> {
  const signer = generateSigner();
  let report: JsonObject;
  try {
    report = refereeReport(corpus, submission, signer);
  } catch (error) {
    if (!(error instanceof SubmissionError)) throw error;
    throw new RunError(`the submission was refused: ${error.code}: ${error.detail}`);
  }
  return {
    report,
    grader: `locally, signed with a one-off key (${signer.did})`,
    expectedIssuer: signer.did,
    warnings: [],
  };
}

function refusalText(body: JsonObject): string {
  const error = body.get("error");
  const detail = body.get("detail") ?? body.get("hint");
  return [error, detail].filter((part) => typeof part === "string").join(": ") || "no reason";
}

/** What the referee publishes at /info: its issuer, and the corpus it grades against. */
interface RefereeInfo {
  issuer: string;
  corpus: JsonValue;
}

/**
 * Reads the referee's /info before anything runs, so an unreachable referee or one without a
 * corpus is found in a second rather than after every verifier call.
 */
async function refereeInfo(referee: URL): Promise<RefereeInfo> {
  const url = new URL("info", referee);
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(REFEREE_TIMEOUT_MS) });
  } catch (error) {
    throw new RunError(`cannot reach ${url.href}: ${errorText(error)}`);
  }
  const info = parseAnswer(await response.text(), url.href);
  const issuer = info.get("issuer");
  const conformance = info.get("conformance");
  const corpus = isObject(conformance) ? (conformance.get("corpus") ?? null) : null;
  if (!response.ok || typeof issuer !== "string") {
    throw new RunError(`${url.href} does not describe a referee (HTTP ${response.status})`);
  }
  if (corpus === null) throw new RunError(`${referee.href} has no conformance corpus deployed`);
  return { issuer, corpus };
}

async function gradeByReferee(
  referee: URL,
  info: RefereeInfo,
  key: string | undefined,
  submission: JsonObject,
): Promise<Graded> {
  const endpoint = new URL("conformance", referee);
  let response: Response;
  try {
    response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      },
      body: dumpCompact(submission),
      signal: AbortSignal.timeout(REFEREE_TIMEOUT_MS),
    });
  } catch (error) {
    throw new RunError(`cannot reach ${endpoint.href}: ${errorText(error)}`);
  }
  const text = await response.text();
  if (response.status !== 200) {
    let reason = `HTTP ${response.status}`;
    try {
      reason += ` ${refusalText(parseAnswer(text, endpoint.href))}`;
    } catch {
      // Not the referee's JSON error shape: the status says enough.
    }
    const hint =
      response.status === 401 || response.status === 402 ? " (pass an API key with --key)" : "";
    throw new RunError(`${endpoint.href} refused the submission: ${reason}${hint}`);
  }
  return {
    report: parseAnswer(text, endpoint.href).get("report") ?? null,
    grader: `by ${referee.href} (its /info names ${info.issuer})`,
    expectedIssuer: info.issuer,
    warnings: [],
  };
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

/** Problems that make the report untrustworthy; each one fails the run. */
function reportProblems(graded: Graded, submission: JsonObject): string[] {
  const problems = conformanceReportProblems(graded.report);
  if (!isObject(graded.report)) return problems;
  const issuer = graded.report.get("issuer");
  if (graded.expectedIssuer !== null && issuer !== graded.expectedIssuer) {
    problems.push(`the issuer is not the referee's (${graded.expectedIssuer})`);
  }
  if (graded.report.get("submission_digest") !== sha256Digest(canonicalBytes(submission))) {
    problems.push("submission_digest is not the digest of the submission sent");
  }
  return problems;
}

function corpusWarning(report: JsonValue, summary: CorpusSummary): string | undefined {
  const graded = isObject(report) ? report.get("corpus") : undefined;
  if (graded === undefined) return undefined;
  return canonicalText(graded) === canonicalText(fromPlain(summary))
    ? undefined
    : "the referee graded against another corpus than the one run here (see report.corpus)";
}

/**
 * Summary lines for the report's `results`: `matched/total` per section and its first
 * mismatches. Read defensively, since the report may come from any referee.
 */
function sectionLines(report: JsonValue): string[] {
  const results = isObject(report) ? report.get("results") : undefined;
  if (!isObject(results)) return ["  (the report has no results)"];
  const width = Math.max(0, ...[...results.keys()].map((name) => name.length));
  const lines: string[] = [];
  for (const [name, result] of results) {
    if (!isObject(result)) continue;
    const matched = dumpCompact(result.get("matched") ?? null);
    const total = dumpCompact(result.get("total") ?? null);
    lines.push(`  ${name.padEnd(width)}  ${matched}/${total}`);
    const mismatches = result.get("mismatches");
    if (!isArray(mismatches)) continue;
    for (const mismatch of mismatches.slice(0, LISTED_PER_SECTION)) {
      if (!isObject(mismatch)) continue;
      const field = (member: string) => dumpCompact(mismatch.get(member) ?? null);
      const id = mismatch.get("id");
      const reason = mismatch.get("reason");
      lines.push(
        `    ${typeof id === "string" ? id : field("id")}: ${typeof reason === "string" ? reason : field("reason")} (expected ${field("expected")}, got ${field("got")})`,
      );
    }
    if (mismatches.length > LISTED_PER_SECTION) {
      lines.push(`    … and ${mismatches.length - LISTED_PER_SECTION} more`);
    }
  }
  return lines;
}

function summary(
  options: Options,
  corpus: Corpus,
  run: { calls: number; problems: CallProblem[]; seconds: number },
  graded: Graded,
  problems: string[],
): string {
  // Named by manifest: the referee grades the vectors a manifest pins, which can be fewer
  // than the corpus holds (bundles: 40 of its 77 vectors).
  const sizes = SECTIONS.flatMap((name) => {
    const section = corpus[name];
    return section === undefined
      ? []
      : [`${name} ${section.vectors.length} (${MANIFEST_PATHS[name]})`];
  });
  const lines = [
    `corpus    ${options.corpusDir}, the vectors its manifests pin: ${sizes.join(", ")}`,
    `calls     ${run.calls} in ${run.seconds.toFixed(1)} s, ${options.concurrency} at a time, ` +
      `${options.timeoutMs / 1000} s limit each; ${run.problems.length} without a usable answer`,
  ];
  for (const problem of run.problems.slice(0, LISTED_PER_SECTION)) {
    lines.push(`    ${problem.section} ${problem.id}: ${problem.problem}`);
  }
  if (run.problems.length > LISTED_PER_SECTION) {
    lines.push(`    … and ${run.problems.length - LISTED_PER_SECTION} more`);
  }
  lines.push(`graded    ${graded.grader}`);
  lines.push(...sectionLines(graded.report));
  for (const warning of graded.warnings) lines.push(`warning   ${warning}`);
  if (problems.length === 0) {
    const issuer = isObject(graded.report) ? String(graded.report.get("issuer")) : "";
    lines.push(`report    verified: signed by ${issuer}, over the submission sent`);
  } else {
    lines.push(`report    NOT VERIFIED: ${problems.join("; ")}`);
  }
  const verdict = isObject(graded.report) ? graded.report.get("verdict") : undefined;
  lines.push(`verdict   ${typeof verdict === "string" ? verdict : "none"}`);
  return `${lines.join("\n")}\n`;
}

async function writeJson(path: string, value: JsonValue): Promise<void> {
  try {
    await writeFile(path, `${dumpJson(value, { indent: 2 })}\n`);
  } catch (error) {
    throw new RunError(`cannot write ${path}: ${errorText(error)}`);
  }
}

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const options = parseCommand(argv, io, {
    options: OPTIONS,
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
    read: (parsed) => readOptions(parsed, env),
  });
  if (typeof options === "number") return options;
  try {
    const { corpus, hostileFiles } = await loadDeployedCorpus(options.corpusDir);
    const clis = await verifierClis(options, corpus.verification_receipts !== undefined);
    const info = options.referee === null ? null : await refereeInfo(options.referee);
    const started = performance.now();
    const run = await runConformance({
      corpusDir: options.corpusDir,
      corpus,
      hostileFiles,
      bundleCli: clis.bundleCli,
      receiptCli: clis.receiptCli,
      implementation: implementationOf(options, clis.own),
      concurrency: options.concurrency,
      timeoutMs: options.timeoutMs,
    });
    const seconds = (performance.now() - started) / 1000;
    if (options.submissionFile !== undefined) {
      await writeJson(options.submissionFile, run.submission);
    }
    const graded =
      options.referee === null || info === null
        ? await gradeLocally(corpus, run.submission)
        : await gradeByReferee(options.referee, info, options.key, run.submission);
    const warning = corpusWarning(graded.report, summarizeCorpus(corpus));
    if (warning !== undefined) graded.warnings.push(warning);
    if (options.reportFile !== undefined) await writeJson(options.reportFile, graded.report);
    const problems = reportProblems(graded, run.submission);
    io.stdout(summary(options, corpus, { ...run, seconds }, graded, problems));
    const verdict = isObject(graded.report) ? graded.report.get("verdict") : undefined;
    return problems.length === 0 && verdict === "CONFORMANT" ? 0 : 1;
  } catch (error) {
    if (error instanceof CliUsageError || error instanceof RunError) {
      io.stderr(`error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
