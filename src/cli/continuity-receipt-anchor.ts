#!/usr/bin/env node
/**
 * `continuity-receipt-anchor verify <proof> (--digest D | --bundle B --target RID)
 *   [--header HEX]... [--height N]... [--headers FILE]... [--json]` (verifier.md §8.4 "CLI";
 *   `--headers` is ours, so the corpus's headers.json can be used as it is).
 *
 * Exit codes: 0 only for `verified`, 1 for every other result, 2 for usage errors.
 */
import { readFile } from "node:fs/promises";
import { type AnchorResult, verifyProof } from "../verifier/anchor/index.js";
import { recordDigest } from "../verifier/crypto/digest.js";
import { dumpJson } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import {
  isArray,
  isObject,
  type JsonObject,
  type JsonValue,
  member,
  normalizeInteger,
} from "../verifier/json/value.js";
import { type CliIo, isEntryPoint, processIo, runMain } from "./entry.js";
import { CliUsageError, type ParsedLine, parseCommand, usageRefusal } from "./parse-command.js";

const PROGRAM = "continuity-receipt-anchor";

/** The usage text under the name the tool was run as (`receiptd anchor` runs it too). */
export function usage(program = PROGRAM): string {
  const indent = " ".repeat(`usage: ${program} verify `.length);
  return `usage: ${program} verify <proof> (--digest D | --bundle B --target RID)
${indent}[--header HEX]... [--height N]... [--headers FILE]... [--json]

Verifies a detached OpenTimestamps proof. Each --header (80-byte block header, hex) is
paired with the --height at the same position; a header without one is stored at height 0.
--headers reads a JSON file of headers keyed by decimal height, either the object itself or
its "headers" member (the corpus's vectors/anchor/headers.json).
Only merkle-root equality with the supplied headers is checked (no proof-of-work or chain).
Exit status: 0 verified, 1 any other result, 2 usage error or unusable --headers file.
`;
}

/** The CLI adds the bundle-binding and I/O codes of §8.4 to the library's result. */
export type AnchorCliResult = Omit<AnchorResult, "code"> & {
  code: AnchorResult["code"] | "io_error" | "unknown_target" | "anchor_binding_mismatch";
};

interface VerifyRequest {
  proofPath: string;
  expected: { digest: string } | { bundlePath: string; target: string };
  headers: Map<number | bigint, string>;
  headerFiles: string[];
  json: boolean;
}

/** Exact at any size, as attestation heights are, so a header can meet any of them. */
function parseHeight(text: string): number | bigint {
  if (!/^\d+$/.test(text)) {
    throw new CliUsageError(`--height must be a non-negative integer, got ${JSON.stringify(text)}`);
  }
  return normalizeInteger(BigInt(text));
}

const OPTIONS = {
  digest: { type: "string" },
  bundle: { type: "string" },
  target: { type: "string" },
  header: { type: "string", multiple: true },
  height: { type: "string", multiple: true },
  headers: { type: "string", multiple: true },
  json: { type: "boolean" },
} as const;

function readRequest(argv: string[], io: CliIo, program: string): VerifyRequest | number {
  return parseCommand(argv, io, {
    options: OPTIONS,
    allowPositionals: true,
    // The usage text ends in a newline of its own.
    usage: usage(program).trimEnd(),
    help: usage(program),
    read: verifyRequest,
  });
}

function verifyRequest({ values, positionals }: ParsedLine<typeof OPTIONS, true>): VerifyRequest {
  const [command, proofPath, ...extra] = positionals;
  if (command !== "verify") throw new CliUsageError("the only command is verify");
  if (proofPath === undefined) throw new CliUsageError("missing <proof>");
  if (extra.length > 0) throw new CliUsageError(`unexpected argument ${JSON.stringify(extra[0])}`);

  let expected: VerifyRequest["expected"];
  if (values.digest !== undefined) {
    if (values.bundle !== undefined || values.target !== undefined) {
      throw new CliUsageError("--digest cannot be combined with --bundle/--target");
    }
    expected = { digest: values.digest };
  } else if (values.bundle !== undefined && values.target !== undefined) {
    expected = { bundlePath: values.bundle, target: values.target };
  } else {
    throw new CliUsageError("give either --digest or both --bundle and --target");
  }

  const headerTexts = values.header ?? [];
  const heights = (values.height ?? []).map(parseHeight);
  if (heights.length > headerTexts.length) {
    throw new CliUsageError("more --height than --header options");
  }
  const headers = new Map<number | bigint, string>();
  headerTexts.forEach((header, index) => {
    headers.set(heights[index] ?? 0, header);
  });
  return {
    proofPath,
    expected,
    headers,
    headerFiles: values.headers ?? [],
    json: values.json ?? false,
  };
}

/**
 * One header per height: a file that gives a height already given (by --header or another
 * file) different bytes is a mistake to report, not one to settle by order.
 */
function addHeader(
  headers: Map<number | bigint, string>,
  height: number | bigint,
  header: string,
  from: string,
) {
  const known = headers.get(height);
  if (known !== undefined && known.toLowerCase() !== header.toLowerCase()) {
    throw new CliUsageError(`${from} gives height ${height} a second, different header`);
  }
  headers.set(height, header);
}

/** Adds the headers of a `--headers` file: `{height: hex}`, or that object under `headers`. */
async function readHeaderFile(path: string, headers: Map<number | bigint, string>): Promise<void> {
  const from = `--headers ${path}`;
  let document: JsonValue;
  try {
    document = parseJson(await readFile(path));
  } catch (error) {
    throw new CliUsageError(`${from}: ${errorText(error)}`);
  }
  const nested = isObject(document) ? member(document, "headers") : undefined;
  const table = nested ?? document;
  if (!isObject(table)) {
    throw new CliUsageError(`${from}: expected an object of hex headers keyed by block height`);
  }
  for (const [key, value] of table) {
    if (!/^\d+$/.test(key)) {
      throw new CliUsageError(`${from}: ${JSON.stringify(key)} is not a block height`);
    }
    // Exact at any size, as --height and attestation heights are.
    const height = normalizeInteger(BigInt(key));
    if (typeof value !== "string") {
      throw new CliUsageError(`${from}: the header at height ${key} is not a hex string`);
    }
    addHeader(headers, height, value, from);
  }
}

function earlyResult(
  status: AnchorCliResult["status"],
  code: AnchorCliResult["code"],
  detail: string,
): AnchorCliResult {
  return { status, code, detail, file_digest: "", attestations: [] };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The receipt with `receipt_id` equal to `target`; a later duplicate wins, as in bundle verification. */
function findReceipt(bundle: JsonValue, target: string): JsonObject | undefined {
  if (!isObject(bundle)) return undefined;
  const receipts = member(bundle, "receipts");
  if (!isArray(receipts)) return undefined;
  return receipts.findLast(
    (receipt): receipt is JsonObject =>
      isObject(receipt) && member(receipt, "receipt_id") === target,
  );
}

function opentimestampsAnchorHashes(bundle: JsonValue, target: string): JsonValue[] {
  const anchors = isObject(bundle) ? member(bundle, "anchors") : null;
  if (!isArray(anchors)) return [];
  return anchors.flatMap((anchor) => {
    if (!isObject(anchor) || member(anchor, "target") !== target) return [];
    const meta = member(anchor, "anchor");
    if (!isObject(meta) || member(meta, "type") !== "opentimestamps") return [];
    return [member(anchor, "hash")];
  });
}

/** Recomputes the target receipt's digest and checks the bundle binds it to an OTS anchor. */
async function bundleDigest(
  bundlePath: string,
  target: string,
): Promise<{ digest: string } | { failure: AnchorCliResult }> {
  let bundle: JsonValue;
  try {
    bundle = parseJson(await readFile(bundlePath));
  } catch (error) {
    return {
      failure: earlyResult("invalid", "io_error", `cannot read bundle: ${errorText(error)}`),
    };
  }
  const receipt = findReceipt(bundle, target);
  if (receipt === undefined) {
    return {
      failure: earlyResult("invalid", "unknown_target", `no receipt with receipt_id ${target}`),
    };
  }
  let digest: string;
  try {
    digest = recordDigest(receipt);
  } catch (error) {
    return {
      failure: earlyResult(
        "invalid",
        "bad_digest",
        `target receipt has no digest: ${errorText(error)}`,
      ),
    };
  }
  const hashes = opentimestampsAnchorHashes(bundle, target);
  if (!hashes.includes(digest)) {
    const found =
      hashes.length === 0
        ? "the bundle has no opentimestamps anchor for it"
        : "no opentimestamps anchor for it has that hash";
    return {
      failure: earlyResult(
        "mismatch",
        "anchor_binding_mismatch",
        `receipt ${target} has digest ${digest} but ${found}`,
      ),
    };
  }
  return { digest };
}

async function runVerify(request: VerifyRequest): Promise<AnchorCliResult> {
  let proof: Uint8Array;
  try {
    proof = await readFile(request.proofPath);
  } catch (error) {
    return earlyResult("invalid", "io_error", `cannot read proof: ${errorText(error)}`);
  }
  let digest: string;
  if ("digest" in request.expected) {
    digest = request.expected.digest;
  } else {
    const bound = await bundleDigest(request.expected.bundlePath, request.expected.target);
    if ("failure" in bound) return bound.failure;
    digest = bound.digest;
  }
  return verifyProof(proof, digest, request.headers);
}

function describeAttestation(attestation: AnchorResult["attestations"][number]): string {
  switch (attestation.kind) {
    case "pending":
      return `pending ${attestation.value}`;
    case "bitcoin":
    case "litecoin":
      return `${attestation.kind} block ${attestation.value}`;
    case "unknown":
      return `unknown ${attestation.tag} (${attestation.payload.length / 2} payload bytes)`;
  }
}

function humanSummary(result: AnchorCliResult): string {
  const lines = [`${result.status} (${result.code}): ${result.detail}`];
  if (result.file_digest !== "") lines.push(`file digest: ${result.file_digest}`);
  for (const attestation of result.attestations) {
    lines.push(`attestation: ${describeAttestation(attestation)}`);
  }
  if (result.confirmed !== undefined) {
    const { block_height, merkle_root, header_time } = result.confirmed;
    const time = new Date(header_time * 1000).toISOString();
    lines.push(`confirmed: block ${block_height}, merkle root ${merkle_root}, header time ${time}`);
  }
  return `${lines.join("\n")}\n`;
}

/**
 * Runs the CLI with `argv` (arguments after the program name) and returns the exit code;
 * `program` is the name usage text shows.
 */
export async function main(
  argv: string[],
  output: CliIo = processIo,
  program = PROGRAM,
): Promise<number> {
  const request = readRequest(argv, output, program);
  if (typeof request === "number") return request;
  try {
    for (const file of request.headerFiles) await readHeaderFile(file, request.headers);
  } catch (error) {
    const code = usageRefusal(error, output, usage(program).trimEnd());
    if (code === undefined) throw error;
    return code;
  }
  const result = await runVerify(request);
  output.stdout(request.json ? `${dumpJson(result, { indent: 2 })}\n` : humanSummary(result));
  return result.status === "verified" ? 0 : 1;
}

if (isEntryPoint(import.meta.url)) runMain(main);
