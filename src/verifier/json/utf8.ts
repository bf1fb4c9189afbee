/**
 * Strict UTF-8 decoding with Python's error wording.
 *
 * The fast path is the platform's fatal `TextDecoder` (WHATWG UTF-8 rejects overlongs,
 * surrogates and code points above U+10FFFF exactly as CPython does). Only when it
 * rejects the input do we walk the bytes again to name the offending position the way
 * `'utf-8' codec can't decode ...` does, so that error details match the reference.
 */
import { codedErrorClass } from "../coded-error.js";

const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export type Utf8DecodeErrorCode = "invalid_utf8";
export class Utf8DecodeError extends codedErrorClass<Utf8DecodeErrorCode>("invalid_utf8") {
  override readonly name = "Utf8DecodeError";
}

export function decodeUtf8Strict(bytes: Uint8Array): string {
  try {
    return fatalDecoder.decode(bytes);
  } catch {
    throw new Utf8DecodeError(describeUtf8Error(bytes));
  }
}

const isContinuation = (b: number | undefined): boolean =>
  b !== undefined && b >= 0x80 && b <= 0xbf;

/** Mirrors CPython's `utf8_decode` error classification. */
export function describeUtf8Error(bytes: Uint8Array): string {
  const end = bytes.length;
  let s = 0;
  while (s < end) {
    const ch = bytes[s]!;
    let problem: { reason: string; length: number } | null = null;
    let size = 1;
    if (ch < 0x80) {
      size = 1;
    } else if (ch < 0xc2) {
      problem = { reason: "invalid start byte", length: 1 };
    } else if (ch < 0xe0) {
      if (end - s < 2) problem = { reason: "unexpected end of data", length: end - s };
      else if (!isContinuation(bytes[s + 1]))
        problem = { reason: "invalid continuation byte", length: 1 };
      size = 2;
    } else if (ch < 0xf0) {
      const ch2 = bytes[s + 1];
      const badSecond =
        !isContinuation(ch2) || (ch === 0xe0 && ch2! < 0xa0) || (ch === 0xed && ch2! >= 0xa0);
      if (end - s < 3) {
        problem =
          end - s >= 2 && badSecond
            ? { reason: "invalid continuation byte", length: 1 }
            : { reason: "unexpected end of data", length: end - s };
      } else if (badSecond) problem = { reason: "invalid continuation byte", length: 1 };
      else if (!isContinuation(bytes[s + 2]))
        problem = { reason: "invalid continuation byte", length: 2 };
      size = 3;
    } else if (ch < 0xf5) {
      const ch2 = bytes[s + 1];
      const badSecond =
        !isContinuation(ch2) || (ch === 0xf0 && ch2! < 0x90) || (ch === 0xf4 && ch2! >= 0x90);
      if (end - s < 4) {
        if (end - s >= 2 && badSecond) problem = { reason: "invalid continuation byte", length: 1 };
        else if (end - s >= 3 && !isContinuation(bytes[s + 2]))
          problem = { reason: "invalid continuation byte", length: 2 };
        else problem = { reason: "unexpected end of data", length: end - s };
      } else if (badSecond) problem = { reason: "invalid continuation byte", length: 1 };
      else if (!isContinuation(bytes[s + 2]))
        problem = { reason: "invalid continuation byte", length: 2 };
      else if (!isContinuation(bytes[s + 3]))
        problem = { reason: "invalid continuation byte", length: 3 };
      size = 4;
    } else {
      problem = { reason: "invalid start byte", length: 1 };
    }
    if (problem) {
      if (problem.length === 1) {
        return `'utf-8' codec can't decode byte 0x${ch.toString(16).padStart(2, "0")} in position ${s}: ${problem.reason}`;
      }
      return `'utf-8' codec can't decode bytes in position ${s}-${s + problem.length - 1}: ${problem.reason}`;
    }
    s += size;
  }
  return "'utf-8' codec can't decode the input";
}
