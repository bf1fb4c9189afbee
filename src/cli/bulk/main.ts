/**
 * `receiptd verify`: one bundle as `continuity-receipt-verify` verifies it (its JSON, its exit
 * codes), or many in bulk (`run.ts`). A single file argument without a bulk option keeps the
 * single-file behaviour; anything else — several arguments, a directory, `-`, or any of
 * `--ndjson --jobs --remote --key --out --resume --summary --full` — is a bulk run.
 */
import { stat } from "node:fs/promises";
import { type CliIo, processIo } from "../entry.js";
import { CliUsageError, parseCommand } from "../parse-command.js";
import { type BulkRequest, type BulkStreams, runBulk } from "./run.js";

const PROGRAM = "receiptd verify";

export function usage(program = PROGRAM): string {
  return (
    `usage: ${program} <bundle> [--require-anchor] [--revocations PATH|URL]...\n` +
    `       ${program} <file|dir|-> ... [--ndjson] [--jobs N] [--remote URL [--key K]] ` +
    "[--out FILE [--resume]] [--require-anchor] [--summary] [--full]"
  );
}

const help = (program: string) => `${usage(program)}

One bundle: verifies it and prints the result as JSON (exit 0 TRUSTED, 1 any other verdict,
2 unreadable bundle or usage error). --revocations (repeatable) adds the statements of a
revocation document (a file, or an https URL); one bundle only.

In bulk: verifies every input and writes one NDJSON line per input, in input order:
{"source", "verdict", "error_codes"} (and "result", the whole verdict payload, with --full).
  <file>            a bundle (with --ndjson: a file of bundles, one a line)
  <dir>             every *.json below it, sorted by path (with --ndjson: *.ndjson, *.jsonl)
  -                 NDJSON on stdin
  --jobs N          worker threads (default: one per core); with --remote, batches in flight (4)
  --remote URL      verify with the service at URL (batches of its max_batch) instead of locally
  --key K           the API key for --remote
  --out FILE        write the lines to FILE instead of stdout
  --resume          skip the inputs FILE already holds (after an interrupted run)
  --require-anchor  a bundle without a confirmed anchor is PROVISIONAL
  --summary         counts per verdict, top error codes, bundles/s (stderr; stdout with --out)
  --full            add each input's whole result to its line
A progress bar is drawn on stderr when it is a terminal.
Exit status: 0 every bundle TRUSTED, 1 some other verdict, 2 an unreadable input, a usage
error, or a run the service refused to finish (the lines written so far stay; --resume).
`;

const BULK_FLAGS = ["ndjson", "resume", "summary", "full"] as const;
const BULK_VALUES = ["jobs", "remote", "key", "out"] as const;

type Parsed =
  | { kind: "single"; path: string; requireAnchor: boolean; revocations: number }
  | { kind: "bulk"; request: BulkRequest; revocations: readonly string[] };

export async function main(
  argv: string[],
  io: CliIo = processIo,
  program = PROGRAM,
  streams: BulkStreams = {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
  },
): Promise<number> {
  const parsed = parseCommand(argv, io, {
    options: {
      "require-anchor": { type: "boolean", default: false },
      revocations: { type: "string", multiple: true, default: [] },
      ndjson: { type: "boolean" },
      jobs: { type: "string" },
      remote: { type: "string" },
      key: { type: "string" },
      out: { type: "string" },
      resume: { type: "boolean" },
      summary: { type: "boolean" },
      full: { type: "boolean" },
    },
    allowPositionals: true,
    usage: usage(program),
    help: help(program),
    read: ({ values, positionals }): Parsed => {
      const bulkOption =
        BULK_FLAGS.some((name) => values[name] === true) ||
        BULK_VALUES.some((name) => values[name] !== undefined);
      if (positionals.length === 0) throw new CliUsageError("expected a bundle, a directory or -");
      if (positionals.length === 1 && positionals[0] !== "-" && !bulkOption) {
        return {
          kind: "single",
          path: positionals[0] as string,
          requireAnchor: values["require-anchor"] ?? false,
          revocations: (values.revocations ?? []).length,
        };
      }
      if ((values.revocations ?? []).length > 0) {
        throw new CliUsageError("--revocations takes one bundle, not a bulk run");
      }
      if (values.resume && values.out === undefined) {
        throw new CliUsageError("--resume needs --out FILE");
      }
      if (values.key !== undefined && values.remote === undefined) {
        throw new CliUsageError("--key goes with --remote");
      }
      let jobs: number | null = null;
      if (values.jobs !== undefined) {
        jobs = Number(values.jobs);
        if (!/^\d+$/.test(values.jobs) || jobs < 1 || jobs > 1024) {
          throw new CliUsageError("--jobs takes a whole number from 1 to 1024");
        }
      }
      if (values.remote !== undefined && !/^https?:\/\//.test(values.remote)) {
        throw new CliUsageError("--remote takes an http:// or https:// URL");
      }
      return {
        kind: "bulk",
        revocations: values.revocations ?? [],
        request: {
          inputs: positionals,
          ndjson: values.ndjson ?? false,
          jobs,
          remote: values.remote ?? null,
          key: values.key ?? null,
          out: values.out ?? null,
          resume: values.resume ?? false,
          requireAnchor: values["require-anchor"] ?? false,
          summary: values.summary ?? false,
          full: values.full ?? false,
        },
      };
    },
  });
  if (typeof parsed === "number") return parsed;
  if (parsed.kind === "single") {
    // A directory alone is a bulk run; anything else keeps the one-bundle contract.
    const path = parsed.path;
    const isDirectory = await stat(path).then(
      (found) => found.isDirectory(),
      () => false,
    );
    // Loaded here: a bulk run's main thread only routes bytes and never needs the verifier.
    if (!isDirectory)
      return (await import("../continuity-receipt-verify.js")).main(argv, io, program);
    if (parsed.revocations > 0) {
      io.stderr(`error: --revocations takes one bundle, not a bulk run\n${usage(program)}\n`);
      return 2;
    }
    return runBulk(
      {
        inputs: [path],
        ndjson: false,
        jobs: null,
        remote: null,
        key: null,
        out: null,
        resume: false,
        requireAnchor: parsed.requireAnchor,
        summary: false,
        full: false,
      },
      io,
      streams,
    );
  }
  return runBulk(parsed.request, io, streams);
}
