/**
 * A bound on what verification may write, shared by every bundle of one request.
 *
 * A verdict lists one entry per failed check, and an entry can quote input (a `receipt_id`,
 * a policy value, a spec string). Some checks run once per pair of records (each receipt
 * against each revocation of its key) or quote one shared value per receipt (the pass's
 * policy in every `policy_mismatch`), so a 1 MiB body can ask for gigabytes of errors. The
 * budget is charged as each entry is recorded, and verification stops with
 * `ResultBudgetExceeded` as soon as the entries would pass the limit: the work and the
 * output of a bounded request stay bounded, and nothing above the limit is ever built.
 *
 * The charge is the entry's exact size in the compact UTF-8 JSON a service writes
 * (`dumpCompact`), separators between entries not counted: a request is refused only when its
 * answer would really hold more than `limit` bytes of errors and reasons. Working a charge out
 * scans the entry's strings once, so it costs no more than the bytes it charges (quoted
 * containers are measured once and remembered). Without a budget (the CLIs, the library's
 * default) verification is unbounded, as in the reference.
 */

import { CodedError } from "../coded-error.js";
import { dumpCompact } from "../json/dump.js";
import { isArray, isObject, type JsonValue } from "../json/value.js";
import type { VerificationError } from "./result.js";

/** `{"code":,"detail":,"receipt_id":}`: one error entry's text besides its three values. */
const ERROR_ENTRY_TEXT = 33;
/** Control characters JSON writes as a two-character escape (`\b \t \n \f \r`); others take six. */
const SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

/** UTF-8 bytes of `value` as a JSON string, quotes included, as `JSON.stringify` writes it. */
export function stringTextBytes(value: string): number {
  let bytes = 2;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20) bytes += SHORT_ESCAPES.has(c) ? 2 : 6;
    else if (c === 0x22 || c === 0x5c) bytes += 2;
    else if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(value.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      bytes += 6; // a lone surrogate is written as a \uXXXX escape
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

export type ResultBudgetExceededCode = "result_too_large";

/** The entries of one request would exceed the budget's limit (in bytes of JSON). */
export class ResultBudgetExceeded extends CodedError<ResultBudgetExceededCode> {
  override readonly name = "ResultBudgetExceeded";
  constructor(readonly limit: number) {
    const message = `the errors and reasons would exceed ${limit} bytes of JSON`;
    super("result_too_large", message, { message });
  }
}

export class ResultBudget {
  #spent = 0;
  /**
   * Size of each container quoted so far, so a value quoted again costs nothing more
   * (made on first use: most requests never quote a container).
   */
  #containerBytes: WeakMap<object, number> | undefined;

  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 0) {
      throw new RangeError(`a result budget is a whole number of bytes, got ${limit}`);
    }
  }

  /** Bytes charged so far: the JSON text of the entries recorded. */
  get spent(): number {
    return this.#spent;
  }

  chargeError(error: VerificationError): void {
    this.#charge(
      ERROR_ENTRY_TEXT +
        stringTextBytes(error.code) +
        stringTextBytes(error.detail) +
        this.#textBytes(error.receipt_id),
    );
  }

  chargeReason(reason: string): void {
    this.#charge(stringTextBytes(reason));
  }

  /** A whole answer already written (`bytes` of JSON): an MCP `verify_anchor` result. */
  chargeText(bytes: number): void {
    this.#charge(bytes);
  }

  #charge(length: number): void {
    this.#spent += length;
    if (this.#spent > this.limit) throw new ResultBudgetExceeded(this.limit);
  }

  /** UTF-8 bytes of `value` in compact JSON. */
  #textBytes(value: JsonValue): number {
    if (typeof value === "string") return stringTextBytes(value);
    if (!isArray(value) && !isObject(value)) return dumpCompact(value).length;
    this.#containerBytes ??= new WeakMap();
    const known = this.#containerBytes.get(value);
    if (known !== undefined) return known;
    let bytes = 2;
    if (isArray(value)) {
      for (const item of value) bytes += this.#textBytes(item) + 1;
      if (value.length > 0) bytes -= 1;
    } else {
      for (const [key, item] of value)
        bytes += stringTextBytes(key) + 1 + this.#textBytes(item) + 1;
      if (value.size > 0) bytes -= 1;
    }
    this.#containerBytes.set(value, bytes);
    return bytes;
  }
}
