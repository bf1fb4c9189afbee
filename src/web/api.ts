/**
 * The page's verifier, as plain functions: each gives exactly what one of receiptd's CLIs
 * prints for the same inputs (and so what the server and the Python reference answer).
 * `window.receiptd` (main.ts) exposes them; the page's own panels call them too.
 *
 * - `verifyBundleJson`  ≙ `continuity-receipt-verify BUNDLE [--require-anchor] [--revocations F]…`
 * - `verifyReceiptJson` ≙ `continuity-receipt-verify-receipt RECEIPT [--bundle B] [--revocations F]…`
 * - `verifyAnchorJson`  ≙ `continuity-receipt-anchor verify PROOF --digest D [--headers F]… --json`
 *
 * Each returns the CLI's standard output, byte for byte (the JSON and its final newline).
 * Where the CLI would stop with exit status 2 and no JSON (input that is not JSON, a headers
 * table that is not one), these throw a `ReceiptdInputError` with the CLI's message.
 *
 * No DOM and no I/O here: the tests run this module under Node as well.
 */
import { parseOtsProof, verifyProof } from "../verifier/anchor/index.js";
import { type DocumentResult, verifyBundleBytes } from "../verifier/bundle/verify-document.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { verifierCrypto } from "../verifier/crypto/provider.js";
import { dumpJson } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import { isObject, type JsonValue, member, normalizeInteger } from "../verifier/json/value.js";
import { parseRevocationDocument, RevocationLoadError } from "../verifier/revocations/document.js";
import { mergeStatements } from "../verifier/revocations/statements.js";
import { verifyVerificationReceipt } from "../verifier/verification-receipt/index.js";
import { VERIFIER_VERSION } from "../verifier/version.js";

/** JSON text (read as its UTF-8 bytes) or the bytes of a file. */
export type Input = string | Uint8Array | ArrayBuffer;

/**
 * A revocation document: its bytes or text, or `{name, data}` where `name` is what the CLI
 * would have been given (a file name or URL): a problem with the document is reported as
 * `<name>: <problem>`, as the CLIs report it.
 */
export type RevocationInput = Input | { name: string; data: Input };

export interface BundleOptions {
  /** `--require-anchor`: a bundle without a confirmed anchor is PROVISIONAL. */
  requireAnchor?: boolean;
  /** `--revocations`, in order. */
  revocations?: readonly RevocationInput[];
}

export interface ReceiptOptions {
  /** `--bundle`: the bundle the receipt should describe. */
  bundle?: Input;
  /** `--revocations`, in order. */
  revocations?: readonly RevocationInput[];
}

/**
 * Block headers by height: `{"358391": "0200…"}`, that object under `headers` (the corpus's
 * headers.json), or its JSON text; or a Map from height to hex or 80 raw bytes.
 */
export type HeadersInput =
  | string
  | Record<string, unknown>
  | Map<number | bigint, string | Uint8Array>;

export interface AnchorOptions {
  /** The digest the proof must commit to: hex, optionally `sha256:` or `0x` prefixed. */
  digest?: string;
  /** Or the file itself, hashed here with the proof's own file hash operation. */
  file?: Input;
  headers?: HeadersInput;
}

export type ReceiptdInputErrorCode = "bad_input";
/** Input a CLI refuses before it checks anything (exit status 2). */
export class ReceiptdInputError extends codedErrorClass<ReceiptdInputErrorCode>("bad_input") {
  override readonly name = "ReceiptdInputError";
}

const encoder = new TextEncoder();

export function toBytes(input: Input): Uint8Array {
  if (typeof input === "string") return encoder.encode(input);
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  throw new TypeError("expected JSON text, a Uint8Array or an ArrayBuffer");
}

function cliJson(value: unknown): string {
  return `${dumpJson(value, { indent: 2 })}\n`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `loadAndMergeRevocations`, for documents already in hand. Throws RevocationLoadError. */
export function mergeRevocationDocuments(documents: readonly RevocationInput[]): JsonValue[] {
  const lists: JsonValue[][] = [];
  for (const document of documents) {
    const named = typeof document === "object" && "name" in document && "data" in document;
    const bytes = toBytes(named ? document.data : (document as Input));
    try {
      lists.push(parseRevocationDocument(bytes));
    } catch (error) {
      if (named && error instanceof RevocationLoadError) {
        throw new RevocationLoadError(error.code, `${document.name}: ${error.detail}`);
      }
      throw error;
    }
  }
  return mergeStatements(...lists);
}

/** The result object of `verifyBundleJson` (what the CLI prints, parsed). */
export function verifyBundleResult(bundle: Input, options: BundleOptions = {}): DocumentResult {
  let externalRevocations: JsonValue[] | null = null;
  if (options.revocations !== undefined && options.revocations.length > 0) {
    try {
      externalRevocations = mergeRevocationDocuments(options.revocations);
    } catch (error) {
      if (!(error instanceof RevocationLoadError)) throw error;
      return {
        verdict: "INSUFFICIENT_EVIDENCE",
        errors: [{ code: error.code, detail: error.detail }],
      };
    }
  }
  return verifyBundleBytes(toBytes(bundle), {
    requireAnchor: options.requireAnchor ?? false,
    externalRevocations,
    universalNewlines: true,
  });
}

/** `continuity-receipt-verify`'s output for `bundle`. */
export function verifyBundleJson(bundle: Input, options: BundleOptions = {}): string {
  return cliJson(verifyBundleResult(bundle, options));
}

/** `continuity-receipt-verify-receipt`'s output for `receipt`. */
export function verifyReceiptJson(receipt: Input, options: ReceiptOptions = {}): string {
  let parsedReceipt: JsonValue;
  try {
    parsedReceipt = parseJson(toBytes(receipt));
  } catch (error) {
    throw new ReceiptdInputError(`receipt is not valid JSON: ${errorText(error)}`);
  }
  let revocations: JsonValue[];
  try {
    revocations = mergeRevocationDocuments(options.revocations ?? []);
  } catch (error) {
    if (!(error instanceof RevocationLoadError)) throw error;
    return cliJson({ valid: false, errors: [error.code] });
  }
  let bundle: JsonValue | undefined;
  if (options.bundle !== undefined) {
    try {
      bundle = parseJson(toBytes(options.bundle));
    } catch (error) {
      throw new ReceiptdInputError(`bundle is not valid JSON: ${errorText(error)}`);
    }
  }
  return cliJson(verifyVerificationReceipt(parsedReceipt, { bundle, revocations }));
}

function headerHeight(text: string, from: string): number | bigint {
  if (!/^\d+$/.test(text))
    throw new ReceiptdInputError(`${from}: ${JSON.stringify(text)} is not a block height`);
  return normalizeInteger(BigInt(text));
}

/**
 * Block headers as the CLI's `--headers` file has them (`{height: hex}`, or that object under
 * `headers`), or as text: that JSON, or one `HEIGHT HEX` per line (what `--height N --header
 * HEX` pairs say).
 */
export function blockHeaders(
  input: HeadersInput | undefined,
): Map<number | bigint, string | Uint8Array> {
  if (input === undefined) return new Map();
  if (input instanceof Map) return input;
  const from = "headers";
  if (typeof input === "string" && !input.trim().startsWith("{")) return headerLines(input);
  let document: JsonValue;
  try {
    document = parseJson(typeof input === "string" ? input : JSON.stringify(input));
  } catch (error) {
    throw new ReceiptdInputError(`${from}: ${errorText(error)}`);
  }
  const nested = isObject(document) ? member(document, "headers") : null;
  const table = isObject(nested) ? nested : document;
  if (!isObject(table)) {
    throw new ReceiptdInputError(
      `${from}: expected an object of hex headers keyed by block height`,
    );
  }
  const headers = new Map<number | bigint, string>();
  for (const [key, value] of table) {
    const height = headerHeight(key, from);
    if (typeof value !== "string") {
      throw new ReceiptdInputError(`${from}: the header at height ${key} is not a hex string`);
    }
    const known = headers.get(height);
    if (known !== undefined && known.toLowerCase() !== value.toLowerCase()) {
      throw new ReceiptdInputError(`${from} gives height ${height} a second, different header`);
    }
    headers.set(height, value);
  }
  return headers;
}

function headerLines(text: string): Map<number | bigint, string> {
  const headers = new Map<number | bigint, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") continue;
    const match = /^\s*(\d+)\s*[:,=\s]\s*([0-9a-fA-F]+)\s*$/.exec(line);
    if (match === null) {
      throw new ReceiptdInputError(
        `headers: each line needs a height and a hex header ("358391 0200…"), not ${JSON.stringify(line.slice(0, 40))}`,
      );
    }
    const height = headerHeight(match[1]!, "headers");
    const known = headers.get(height);
    if (known !== undefined && known.toLowerCase() !== match[2]!.toLowerCase()) {
      throw new ReceiptdInputError(`headers gives height ${height} a second, different header`);
    }
    headers.set(height, match[2]!);
  }
  return headers;
}

/**
 * The digest `file` has under the proof's file hash operation, as hex (SHA-256 when the
 * proof cannot be read: verification then reports why).
 */
export function fileDigestForProof(proof: Uint8Array, file: Uint8Array): string {
  let algorithm: "sha256" | "sha1" | "ripemd160" = "sha256";
  try {
    algorithm = parseOtsProof(proof).fileHashOp;
  } catch {
    // verifyProof reports the unreadable proof.
  }
  return hex(verifierCrypto().digest(algorithm, file));
}

export function hex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** `continuity-receipt-anchor verify PROOF --digest D [--headers …] --json`'s output. */
export function verifyAnchorJson(proof: Input, options: AnchorOptions): string {
  const proofBytes = toBytes(proof);
  let digest: string;
  if (options.digest !== undefined) {
    if (options.file !== undefined)
      throw new ReceiptdInputError("give either a digest or a file, not both");
    digest = options.digest;
  } else if (options.file !== undefined) {
    digest = fileDigestForProof(proofBytes, toBytes(options.file));
  } else {
    throw new ReceiptdInputError("give the digest the proof must commit to, or the file");
  }
  return cliJson(verifyProof(proofBytes, digest, blockHeaders(options.headers)));
}

/** What `window.receiptd` offers (documented in docs/web-page.md). */
export interface ReceiptdGlobal {
  readonly version: string;
  /** The crypto implementation verifying in this page. */
  readonly crypto: string;
  verifyBundleJson(bundle: Input, options?: BundleOptions): string;
  verifyBundle(bundle: Input, options?: BundleOptions): unknown;
  verifyReceiptJson(receipt: Input, options?: ReceiptOptions): string;
  verifyReceipt(receipt: Input, options?: ReceiptOptions): unknown;
  verifyAnchorJson(proof: Input, options: AnchorOptions): string;
  verifyAnchor(proof: Input, options: AnchorOptions): unknown;
}

/**
 * The global. The `…Json` functions give the CLI's text; the others its `JSON.parse` (heights
 * beyond 2^53 lose precision there; the text is exact).
 */
export function receiptdGlobal(): ReceiptdGlobal {
  return Object.freeze({
    version: VERIFIER_VERSION,
    crypto: verifierCrypto().name,
    verifyBundleJson,
    verifyBundle: (bundle: Input, options?: BundleOptions) =>
      JSON.parse(verifyBundleJson(bundle, options)) as unknown,
    verifyReceiptJson,
    verifyReceipt: (receipt: Input, options?: ReceiptOptions) =>
      JSON.parse(verifyReceiptJson(receipt, options)) as unknown,
    verifyAnchorJson,
    verifyAnchor: (proof: Input, options: AnchorOptions) =>
      JSON.parse(verifyAnchorJson(proof, options)) as unknown,
  });
}
