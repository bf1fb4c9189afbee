#!/usr/bin/env node
/**
 * `continuity-receipt-verify <bundle> [--require-anchor] [--revocations PATH|URL]...`
 *
 * The reference CLI's contract (verifier.md §1.1): revocation lists first, then the file
 * size, then strict decoding and parsing, then verification. JSON on stdout as Python
 * prints it; exit 0 for TRUSTED, 1 for any other verdict, 2 when the bundle is unreadable.
 */
import { open } from "node:fs/promises";
import { parseArgs } from "node:util";
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
import { type CliIo, isEntryPoint, processIo, runMain } from "./entry.js";

export const USAGE =
  "usage: continuity-receipt-verify <bundle> [--require-anchor] [--revocations PATH|URL]...";

function print(io: CliIo, result: DocumentResult | object): void {
  io.stdout(`${dumpJson(result, { indent: 2 })}\n`);
}

/** Reads at most `limit + 1` bytes, so an oversized file is refused without buffering it. */
async function readBundleFile(path: string, limit: number): Promise<Buffer | { size: number }> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    if (size > limit) return { size };
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1 << 20, limit + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > limit) return { size: total };
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    io.stderr(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
    return 2;
  }
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

export function parseCommandLine(argv: string[]): {
  bundlePath: string;
  requireAnchor: boolean;
  revocationSources: string[];
} {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "require-anchor": { type: "boolean", default: false },
      revocations: { type: "string", multiple: true, default: [] },
    },
  });
  if (positionals.length !== 1) throw new Error("expected exactly one bundle path");
  return {
    bundlePath: positionals[0]!,
    requireAnchor: values["require-anchor"] ?? false,
    revocationSources: values.revocations ?? [],
  };
}

if (isEntryPoint(import.meta.url)) runMain(main);
