#!/usr/bin/env node
/**
 * `continuity-receipt-verify <bundle> [--require-anchor] [--revocations PATH|URL]...`
 *
 * The reference CLI's contract (verifier.md §1.1): revocation lists first, then the file
 * size, then strict decoding and parsing, then verification. JSON on stdout as Python
 * prints it; exit 0 for TRUSTED, 1 for any other verdict, 2 when the bundle is unreadable.
 */
import { loadAndMergeRevocations } from "../io/revocation-sources.js";
import {
  bundleTooLarge,
  type DocumentResult,
  MAX_BUNDLE_BYTES,
  verifyBundleBytes,
} from "../verifier/bundle/verify-document.js";
import { dumpJson } from "../verifier/json/dump.js";
import type { JsonValue } from "../verifier/json/value.js";
import { RevocationLoadError } from "../verifier/revocations/document.js";
import { readBundleFile } from "./bulk/inputs.js";
import { type CliIo, isEntryPoint, processIo, runMain } from "./entry.js";
import { CliUsageError, parseCommand } from "./parse-command.js";

const PROGRAM = "continuity-receipt-verify";

/** The usage line under the name the tool was run as (`receiptd verify` runs it too). */
export function usage(program = PROGRAM): string {
  return `usage: ${program} <bundle> [--require-anchor] [--revocations PATH|URL]...`;
}

const help = (program: string) => `${usage(program)}

Verifies a Continuity Receipt bundle and prints the result as JSON. --require-anchor makes a
bundle without a confirmed anchor PROVISIONAL; --revocations (repeatable) adds the statements
of a revocation document (a file, or an https URL).
Exit status: 0 TRUSTED, 1 any other verdict, 2 unreadable bundle or usage error.
`;

function print(io: CliIo, result: DocumentResult | object): void {
  io.stdout(`${dumpJson(result, { indent: 2 })}\n`);
}

/** `program` is the name usage text shows. */
export async function main(
  argv: string[],
  io: CliIo = processIo,
  program = PROGRAM,
): Promise<number> {
  const parsed = parseCommand(argv, io, {
    options: {
      "require-anchor": { type: "boolean", default: false },
      revocations: { type: "string", multiple: true, default: [] },
    },
    allowPositionals: true,
    usage: usage(program),
    help: help(program),
    read: ({ values, positionals }) => {
      const [bundlePath, ...extra] = positionals;
      if (bundlePath === undefined || extra.length > 0) {
        throw new CliUsageError("expected exactly one bundle path");
      }
      return {
        bundlePath,
        requireAnchor: values["require-anchor"] ?? false,
        revocationSources: values.revocations ?? [],
      };
    },
  });
  if (typeof parsed === "number") return parsed;
  const { bundlePath, requireAnchor, revocationSources } = parsed;
  let externalRevocations: JsonValue[] | null = null;
  if (revocationSources.length > 0) {
    try {
      externalRevocations = await loadAndMergeRevocations(revocationSources);
    } catch (error) {
      if (!(error instanceof RevocationLoadError)) throw error;
      print(io, {
        verdict: "INSUFFICIENT_EVIDENCE",
        errors: [{ code: error.code, detail: error.detail }],
      });
      return 1;
    }
  }
  let bytes: Buffer | { size: number };
  try {
    bytes = await readBundleFile(bundlePath, MAX_BUNDLE_BYTES);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    io.stderr(`error: cannot read bundle: ${reason}\n`);
    return 2;
  }
  const result = Buffer.isBuffer(bytes)
    ? verifyBundleBytes(bytes, { requireAnchor, externalRevocations, universalNewlines: true })
    : bundleTooLarge(bytes.size);
  print(io, result);
  return result.verdict === "TRUSTED" ? 0 : 1;
}

if (isEntryPoint(import.meta.url)) runMain(main);
