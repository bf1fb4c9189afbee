#!/usr/bin/env node
/**
 * `continuity-receipt-verify-receipt <receipt> [--bundle P] [--revocations P|URL]...
 *   [--digest] [--canonical P]` (verifier.md §6.3).
 *
 * Exit codes: 0 valid (or a digest printed), 1 invalid or unusable revocations, 2 unreadable
 * or unparsable input and usage errors.
 */
import { readFile, writeFile } from "node:fs/promises";
import { codedErrorClass } from "../verifier/coded-error.js";
import { sha256Digest } from "../verifier/crypto/digest.js";
import { CanonicalizationError, canonicalBytes } from "../verifier/json/canonical.js";
import { dumpJson } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import { isObject, type JsonValue } from "../verifier/json/value.js";
import { verifyVerificationReceipt } from "../verifier/verification-receipt/index.js";
import { type CliIo, isEntryPoint, processIo, runMain } from "./entry.js";
import { CliUsageError, parseCommand } from "./parse-command.js";
import { statementRevocations } from "./statement-revocations.js";

const PROGRAM = "continuity-receipt-verify-receipt";

/** The usage text under the name the tool was run as (`receiptd verify-receipt` runs it too). */
export function usage(program = PROGRAM): string {
  const indent = " ".repeat(`usage: ${program} `.length);
  return `usage: ${program} <receipt> [--bundle P] [--revocations P|URL]...
${indent}[--digest] [--canonical P]

Checks a verification receipt. --bundle also checks that the receipt describes that bundle;
--revocations (repeatable) checks the issuer key against revocation documents.
--digest prints the receipt digest; --canonical P writes the signed bytes to P and prints it.
Exit status: 0 valid, 1 invalid, 2 unreadable input or usage error.
`;
}

class InputError extends codedErrorClass("bad_input") {}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

interface Request {
  receiptPath: string;
  bundlePath: string | undefined;
  revocationSources: string[];
  digest: boolean;
  canonicalPath: string | undefined;
}

function readRequest(argv: string[], io: CliIo, program: string): Request | number {
  return parseCommand(argv, io, {
    options: {
      bundle: { type: "string" },
      revocations: { type: "string", multiple: true },
      digest: { type: "boolean" },
      canonical: { type: "string" },
    },
    allowPositionals: true,
    // The usage text ends in a newline of its own.
    usage: usage(program).trimEnd(),
    help: usage(program),
    read: ({ values, positionals }) => {
      const [receiptPath, ...extra] = positionals;
      if (receiptPath === undefined) throw new CliUsageError("missing <receipt>");
      if (extra.length > 0) {
        throw new CliUsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
      }
      return {
        receiptPath,
        bundlePath: values.bundle,
        revocationSources: values.revocations ?? [],
        digest: values.digest ?? false,
        canonicalPath: values.canonical,
      };
    },
  });
}

/**
 * The reference words both failures "receipt is not valid JSON"; a missing file is told
 * apart here (same exit code, 2), since "not valid JSON: ENOENT" sends the reader to the
 * file's contents.
 */
async function readReceipt(path: string): Promise<JsonValue> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new InputError(`cannot read receipt: ${errorText(error)}`);
  }
  try {
    return parseJson(bytes);
  } catch (error) {
    throw new InputError(`receipt is not valid JSON: ${errorText(error)}`);
  }
}

/** The signed bytes (the receipt minus `sig`) and their digest, the value to anchor. */
function signedView(receipt: JsonValue): { bytes: Buffer; digest: string } {
  if (!isObject(receipt)) throw new InputError("receipt is not a JSON object");
  let bytes: Buffer;
  try {
    bytes = canonicalBytes(receipt, "sig");
  } catch (error) {
    if (error instanceof CanonicalizationError) {
      throw new InputError(`receipt cannot be canonicalised: ${error.message}`);
    }
    throw error;
  }
  return { bytes, digest: sha256Digest(bytes) };
}

/**
 * The bundle must be strict UTF-8 JSON. The reference hands the raw bytes to `json.loads`,
 * which would also accept a UTF-8 BOM and UTF-16/32 text; we refuse those on purpose, as
 * every other input of this project is strict UTF-8 without a BOM.
 */
async function readBundle(path: string): Promise<JsonValue> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new InputError(`cannot read bundle: ${errorText(error)}`);
  }
  try {
    return parseJson(bytes);
  } catch (error) {
    throw new InputError(`bundle is not valid JSON: ${errorText(error)}`);
  }
}

async function run(request: Request, io: CliIo): Promise<number> {
  const receipt = await readReceipt(request.receiptPath);
  if (request.canonicalPath !== undefined) {
    const { bytes, digest } = signedView(receipt);
    try {
      await writeFile(request.canonicalPath, bytes);
    } catch (error) {
      throw new InputError(`cannot write ${request.canonicalPath}: ${errorText(error)}`);
    }
    io.stdout(`${digest}\n`);
    return 0;
  }
  if (request.digest) {
    io.stdout(`${signedView(receipt).digest}\n`);
    return 0;
  }
  const revocations = await statementRevocations(request.revocationSources, io);
  if (revocations === null) return 1;
  const bundle =
    request.bundlePath === undefined ? undefined : await readBundle(request.bundlePath);
  const result = verifyVerificationReceipt(receipt, { bundle, revocations });
  io.stdout(`${dumpJson(result, { indent: 2 })}\n`);
  return result.valid ? 0 : 1;
}

/** Runs the CLI with `argv` (arguments after the program name) and returns the exit code. */
/** `program` is the name usage text shows. */
export async function main(
  argv: string[],
  io: CliIo = processIo,
  program = PROGRAM,
): Promise<number> {
  const request = readRequest(argv, io, program);
  if (typeof request === "number") return request;
  try {
    return await run(request, io);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 2;
  }
}

if (isEntryPoint(import.meta.url)) runMain(main);
