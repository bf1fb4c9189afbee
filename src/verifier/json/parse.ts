/**
 * Strict JSON parser with the acceptance rules and error wording of the Python
 * reference (`json.loads` with a duplicate-rejecting `object_pairs_hook`, CPython ≥ 3.11).
 *
 * - UTF-8 only, no BOM, no trailing data; whitespace is space, tab, LF, CR.
 * - Duplicate member names (compared after unescaping) are rejected when their object closes.
 * - Integers are exact (bigint beyond the safe range); more than 4300 digits is refused.
 * - Fraction/exponent tokens and `NaN`/`Infinity`/`-Infinity` become `PyFloat`.
 * - Lone surrogate escapes are kept; raw control characters inside strings are refused.
 * - Container nesting beyond `maxDepth` fails with a `nesting` error (Python's RecursionError).
 */

import { CodedError } from "../coded-error.js";
import { reprString } from "./py-scalars.js";
import { SignedSources, ValueKind } from "./signed-sources.js";
import { decodeUtf8Strict, Utf8DecodeError } from "./utf8.js";
import { type JsonObject, type JsonValue, normalizeInteger, PyFloat } from "./value.js";

export type StrictJsonFailure =
  | "encoding"
  | "syntax"
  | "duplicate_member"
  | "integer_too_long"
  | "nesting";

export type StrictJsonErrorCode = "invalid_json";

/** A refused document. `message` is what Python's exception would say. */
export class StrictJsonError extends CodedError<StrictJsonErrorCode> {
  override readonly name = "StrictJsonError";
  constructor(
    readonly reason: StrictJsonFailure,
    message: string,
  ) {
    super("invalid_json", message, { message });
  }
}

export interface ParseOptions {
  /** Deepest container nesting accepted; Python's C scanner gives up near 1000. */
  maxDepth?: number;
  /** Apply Python text-mode universal newlines (`\r\n` and `\r` → `\n`) before parsing. */
  universalNewlines?: boolean;
}

export const PARSER_MAX_DEPTH = 1000;
const MAX_INT_DIGITS = 4300;

export function parseJson(input: Uint8Array | string, options: ParseOptions = {}): JsonValue {
  return parseText(input, options, null);
}

/**
 * `parseJson`, also noting where each member's name and value lie in the input, so that the
 * signed bytes of a record (the document, or an object that is an array element, as a
 * bundle's receipts are) can be spliced from the input instead of encoded from the parsed
 * value (`signed-sources.ts`).
 */
export function parseSigned(
  input: Uint8Array | string,
  options: ParseOptions = {},
): { value: JsonValue; sources: SignedSources } {
  const sources = new SignedSources();
  const value = parseText(input, options, sources);
  return { value, sources };
}

function parseText(
  input: Uint8Array | string,
  options: ParseOptions,
  sources: SignedSources | null,
): JsonValue {
  let text: string;
  if (typeof input === "string") text = input;
  else {
    try {
      text = decodeUtf8Strict(input);
    } catch (error) {
      if (error instanceof Utf8DecodeError) throw new StrictJsonError("encoding", error.message);
      throw error;
    }
  }
  const ascii = typeof input !== "string" && text.length === input.length;
  let translated = false;
  if (options.universalNewlines && text.includes("\r")) {
    text = text.replace(/\r\n?/g, "\n");
    translated = true;
  }
  if (text.charCodeAt(0) === 0xfeff) {
    throw syntaxError(text, "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
  }
  // An ASCII input's bytes are its text, offset for offset, unless newlines were translated.
  sources?.attach(text, ascii, ascii && !translated ? (input as Uint8Array) : null);
  const parser = new Parser(text, options.maxDepth ?? PARSER_MAX_DEPTH, sources);
  return parser.parseDocument();
}

/** Python's `JSONDecodeError.__str__`: positions are counted in code points. */
function syntaxError(text: string, message: string, pos: number): StrictJsonError {
  const lastNewline = pos > 0 ? text.lastIndexOf("\n", pos - 1) : -1;
  let line = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < pos; i = text.indexOf("\n", i + 1)) line++;
  const column = codePointCount(text, lastNewline + 1, pos) + 1;
  const charPos = codePointCount(text, 0, pos);
  return new StrictJsonError(
    "syntax",
    `${message}: line ${line} column ${column} (char ${charPos})`,
  );
}

function codePointCount(text: string, from: number, to: number): number {
  let count = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < to) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

enum Ch {
  Tab = 0x09,
  Lf = 0x0a,
  Cr = 0x0d,
  Space = 0x20,
  Quote = 0x22,
  Plus = 0x2b,
  Comma = 0x2c,
  Minus = 0x2d,
  Dot = 0x2e,
  Slash = 0x2f,
  Zero = 0x30,
  One = 0x31,
  Nine = 0x39,
  Colon = 0x3a,
  UpperE = 0x45,
  UpperI = 0x49,
  UpperN = 0x4e,
  OpenBracket = 0x5b,
  Backslash = 0x5c,
  CloseBracket = 0x5d,
  LowerE = 0x65,
  LowerF = 0x66,
  LowerN = 0x6e,
  LowerT = 0x74,
  LowerU = 0x75,
  OpenBrace = 0x7b,
  CloseBrace = 0x7d,
}

const CONTROL_CHARACTER = /[\x00-\x1f]/g;
/** Control characters other than a line feed (which pretty-printed text has on every line). */
const CONTROL_BUT_LINE_FEED = /[\x00-\x09\x0b-\x1f]/;

/** Thrown where CPython raises `StopIteration(idx)`, which surfaces as "Expecting value". */
class ExpectingValue {
  constructor(readonly pos: number) {}
}

class Parser {
  private depth = 0;
  /** Index just after the value the last `scan*` call returned (avoids a tuple per value). */
  private next = 0;
  /**
   * What the last `scan*` call returned, for `sources`: a `ValueKind`, or the container id the
   * sources gave it. Set only when there are sources.
   */
  private kind: number = ValueKind.Verbatim;
  /** Where the next backslash is, from where the scan last looked (-1: not looked yet). */
  private nextBackslash = -1;
  /** Where the next character below U+0020 is, likewise. */
  private nextControl = -1;
  /**
   * Whether the only control character in the text is the line feed: then the next control
   * character is the next line feed, which `indexOf` finds faster than a regular expression.
   */
  private readonly lineFeedsOnly: boolean;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
    private readonly sources: SignedSources | null,
  ) {
    this.lineFeedsOnly = !CONTROL_BUT_LINE_FEED.test(text);
  }

  parseDocument(): JsonValue {
    const start = this.skipWhitespace(0);
    let value: JsonValue;
    try {
      value = this.scan(start);
    } catch (error) {
      if (error instanceof ExpectingValue) {
        throw syntaxError(this.text, "Expecting value", error.pos);
      }
      throw error;
    }
    const end = this.skipWhitespace(this.next);
    if (end !== this.text.length) throw syntaxError(this.text, "Extra data", end);
    if (this.sources !== null && value instanceof Map) this.sources.record(value, this.kind);
    return value;
  }

  private skipWhitespace(idx: number): number {
    const text = this.text;
    const len = text.length;
    while (idx < len) {
      const c = text.charCodeAt(idx);
      if (c !== Ch.Space && c !== Ch.Lf && c !== Ch.Cr && c !== Ch.Tab) break;
      idx++;
    }
    return idx;
  }

  /** `scan_once`: one value starting exactly at `idx`; returns it and the index after it. */
  private scan(idx: number): JsonValue {
    const text = this.text;
    const len = text.length;
    if (idx >= len) throw new ExpectingValue(idx);
    const c = text.charCodeAt(idx);
    switch (c) {
      case Ch.Quote:
        return this.scanString(idx + 1);
      case Ch.OpenBrace: {
        this.enter("object");
        const obj = this.scanObject(idx + 1);
        this.depth--;
        return obj;
      }
      case Ch.OpenBracket: {
        this.enter("array");
        const arr = this.scanArray(idx + 1);
        this.depth--;
        return arr;
      }
      case Ch.LowerN:
        if (idx + 3 < len && text.startsWith("null", idx)) return this.literal(null, idx + 4);
        break;
      case Ch.LowerT:
        if (idx + 3 < len && text.startsWith("true", idx)) return this.literal(true, idx + 4);
        break;
      case Ch.LowerF:
        if (idx + 4 < len && text.startsWith("false", idx)) return this.literal(false, idx + 5);
        break;
      case Ch.UpperN:
        if (idx + 2 < len && text.startsWith("NaN", idx)) return this.float(Number.NaN, idx + 3);
        break;
      case Ch.UpperI:
        if (idx + 7 < len && text.startsWith("Infinity", idx)) {
          return this.float(Number.POSITIVE_INFINITY, idx + 8);
        }
        break;
      case Ch.Minus:
        if (idx + 8 < len && text.startsWith("-Infinity", idx)) {
          return this.float(Number.NEGATIVE_INFINITY, idx + 9);
        }
        break;
    }
    return this.scanNumber(idx);
  }

  private literal(value: JsonValue, next: number): JsonValue {
    this.next = next;
    this.kind = ValueKind.Verbatim;
    return value;
  }

  private float(value: number, next: number): JsonValue {
    this.next = next;
    this.kind = ValueKind.Float;
    return new PyFloat(value);
  }

  private enter(container: "array" | "object"): void {
    if (++this.depth > this.maxDepth) {
      throw new StrictJsonError(
        "nesting",
        `maximum recursion depth exceeded while decoding a JSON ${container} from a unicode string`,
      );
    }
  }

  private scanNumber(start: number): JsonValue {
    const text = this.text;
    const endIdx = text.length - 1;
    let idx = start;
    if (text.charCodeAt(idx) === Ch.Minus) {
      idx++;
      if (idx > endIdx) throw new ExpectingValue(start);
    }
    let c = text.charCodeAt(idx);
    if (c >= Ch.One && c <= Ch.Nine) {
      idx++;
      while (idx <= endIdx) {
        c = text.charCodeAt(idx);
        if (c < Ch.Zero || c > Ch.Nine) break;
        idx++;
      }
    } else if (c === Ch.Zero) {
      idx++;
    } else {
      throw new ExpectingValue(start);
    }
    let isFloat = false;
    if (idx < endIdx && text.charCodeAt(idx) === Ch.Dot) {
      const d = text.charCodeAt(idx + 1);
      if (d >= Ch.Zero && d <= Ch.Nine) {
        isFloat = true;
        idx += 2;
        while (idx <= endIdx) {
          c = text.charCodeAt(idx);
          if (c < Ch.Zero || c > Ch.Nine) break;
          idx++;
        }
      }
    }
    if (idx < endIdx) {
      c = text.charCodeAt(idx);
      if (c === Ch.LowerE || c === Ch.UpperE) {
        const eStart = idx;
        idx++;
        if (idx < endIdx) {
          c = text.charCodeAt(idx);
          if (c === Ch.Minus || c === Ch.Plus) idx++;
        }
        while (idx <= endIdx) {
          c = text.charCodeAt(idx);
          if (c < Ch.Zero || c > Ch.Nine) break;
          idx++;
        }
        const last = text.charCodeAt(idx - 1);
        if (last >= Ch.Zero && last <= Ch.Nine) isFloat = true;
        else idx = eStart;
      }
    }
    const token = text.slice(start, idx);
    if (isFloat) return this.float(Number(token), idx);
    this.next = idx;
    this.kind = ValueKind.Verbatim;
    const digits = token.charCodeAt(0) === Ch.Minus ? token.length - 1 : token.length;
    if (digits <= 15) {
      const n = Number(token);
      if (n === 0) {
        if (digits !== token.length) this.kind = ValueKind.MinusZero;
        return 0;
      }
      return n;
    }
    if (digits > MAX_INT_DIGITS) {
      throw new StrictJsonError(
        "integer_too_long",
        `Exceeds the limit (${MAX_INT_DIGITS} digits) for integer string conversion: value has ${digits} digits; use sys.set_int_max_str_digits() to increase the limit`,
      );
    }
    return normalizeInteger(BigInt(token));
  }

  /**
   * `scanstring`: `begin` is the index just after the opening quote. Most strings hold no
   * escape and no control character: for those the closing quote is found natively, and the
   * next backslash and control character are looked up once and reused while the scan has not
   * passed them (most documents have none, or one per line).
   */
  private scanString(begin: number): string {
    const text = this.text;
    const quote = text.indexOf('"', begin);
    if (quote >= 0) {
      if (this.nextBackslash < begin) {
        const found = text.indexOf("\\", begin);
        this.nextBackslash = found < 0 ? text.length : found;
      }
      if (this.nextControl < begin) {
        if (this.lineFeedsOnly) {
          const found = text.indexOf("\n", begin);
          this.nextControl = found < 0 ? text.length : found;
        } else {
          CONTROL_CHARACTER.lastIndex = begin;
          this.nextControl = CONTROL_CHARACTER.test(text)
            ? CONTROL_CHARACTER.lastIndex - 1
            : text.length;
        }
      }
      if (quote < this.nextBackslash && quote < this.nextControl) {
        this.next = quote + 1;
        this.kind = ValueKind.Verbatim;
        return text.slice(begin, quote);
      }
    }
    return this.scanEscapedString(begin);
  }

  /** `scanString` of a string with an escape or a control character (or no end). */
  private scanEscapedString(begin: number): string {
    const text = this.text;
    const len = text.length;
    let chunks: string | null = null;
    let escaped = false;
    let end = begin;
    for (;;) {
      let next = end;
      let c = 0;
      for (; next < len; next++) {
        c = text.charCodeAt(next);
        if (c === Ch.Quote || c === Ch.Backslash) break;
        if (c <= 0x1f) throw syntaxError(text, "Invalid control character at", next);
      }
      if (next >= len) throw syntaxError(text, "Unterminated string starting at", begin - 1);
      if (next !== end) {
        const piece = text.slice(end, next);
        chunks = chunks === null ? piece : chunks + piece;
      }
      next++;
      if (c === Ch.Quote) {
        this.next = next;
        this.kind = escaped ? ValueKind.Escaped : ValueKind.Verbatim;
        return chunks ?? "";
      }
      escaped = true;
      if (next === len) throw syntaxError(text, "Unterminated string starting at", begin - 1);
      const esc = text.charCodeAt(next);
      let decoded: string;
      if (esc !== Ch.LowerU) {
        end = next + 1;
        switch (esc) {
          case Ch.Quote:
            decoded = '"';
            break;
          case Ch.Backslash:
            decoded = "\\";
            break;
          case Ch.Slash:
            decoded = "/";
            break;
          case 0x62:
            decoded = "\b";
            break;
          case 0x66:
            decoded = "\f";
            break;
          case 0x6e:
            decoded = "\n";
            break;
          case 0x72:
            decoded = "\r";
            break;
          case 0x74:
            decoded = "\t";
            break;
          default:
            throw syntaxError(text, "Invalid \\escape", end - 2);
        }
      } else {
        next++;
        end = next + 4;
        if (end >= len) throw syntaxError(text, "Invalid \\uXXXX escape", next - 1);
        let code = this.hex4(next, end);
        next = end;
        if (
          code >= 0xd800 &&
          code <= 0xdbff &&
          end + 6 < len &&
          text.charCodeAt(next) === Ch.Backslash &&
          text.charCodeAt(next + 1) === Ch.LowerU
        ) {
          const low = this.hex4(next + 2, end + 6);
          if (low >= 0xdc00 && low <= 0xdfff) {
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
            end += 6;
          }
        }
        decoded = String.fromCodePoint(code);
      }
      chunks = chunks === null ? decoded : chunks + decoded;
    }
  }

  /** Four hex digits in `[from, to)`; CPython reports a bad digit at `to - 5`. */
  private hex4(from: number, to: number): number {
    let code = 0;
    for (let i = from; i < to; i++) {
      const d = this.text.charCodeAt(i);
      let v: number;
      if (d >= 0x30 && d <= 0x39) v = d - 0x30;
      else if (d >= 0x61 && d <= 0x66) v = d - 0x57;
      else if (d >= 0x41 && d <= 0x46) v = d - 0x37;
      else throw syntaxError(this.text, "Invalid \\uXXXX escape", to - 5);
      code = (code << 4) | v;
    }
    return code;
  }

  /** `idx` is just after the `{`. */
  private scanObject(idx: number): JsonObject {
    const text = this.text;
    const endIdx = text.length - 1;
    const obj: JsonObject = new Map();
    let duplicate: string | null = null;
    const sources = this.sources;
    let lastMember = -1;
    let escapedNames = false;
    idx = this.skipWhitespace(idx);
    if (idx > endIdx || text.charCodeAt(idx) !== Ch.CloseBrace) {
      for (;;) {
        if (idx > endIdx || text.charCodeAt(idx) !== Ch.Quote) {
          throw syntaxError(text, "Expecting property name enclosed in double quotes", idx);
        }
        const keyStart = idx;
        const key = this.scanString(idx + 1);
        const keyEnd = this.next;
        const keyEscaped = this.kind === ValueKind.Escaped;
        idx = this.skipWhitespace(keyEnd);
        if (idx > endIdx || text.charCodeAt(idx) !== Ch.Colon) {
          throw syntaxError(text, "Expecting ':' delimiter", idx);
        }
        idx = this.skipWhitespace(idx + 1);
        const value = this.scan(idx);
        if (duplicate === null && obj.has(key)) duplicate = key;
        obj.set(key, value);
        if (sources !== null) {
          if (keyEscaped) escapedNames = true;
          lastMember = sources.member(
            lastMember,
            key,
            keyEscaped ? -1 : keyStart,
            keyEnd,
            idx,
            this.next,
            this.kind,
          );
        }
        idx = this.skipWhitespace(this.next);
        if (idx <= endIdx && text.charCodeAt(idx) === Ch.CloseBrace) break;
        if (idx > endIdx || text.charCodeAt(idx) !== Ch.Comma) {
          throw syntaxError(text, "Expecting ',' delimiter", idx);
        }
        idx = this.skipWhitespace(idx + 1);
      }
    }
    if (duplicate !== null) {
      throw new StrictJsonError(
        "duplicate_member",
        `duplicate JSON object member: ${reprString(duplicate)}`,
      );
    }
    this.next = idx + 1;
    if (sources !== null) this.kind = sources.container(obj, lastMember, obj.size, escapedNames);
    return obj;
  }

  /** `idx` is just after the `[`. */
  private scanArray(idx: number): JsonValue[] {
    const text = this.text;
    const endIdx = text.length - 1;
    const arr: JsonValue[] = [];
    const sources = this.sources;
    let lastMember = -1;
    idx = this.skipWhitespace(idx);
    if (idx > endIdx || text.charCodeAt(idx) !== Ch.CloseBracket) {
      for (;;) {
        const item = this.scan(idx);
        arr.push(item);
        if (sources !== null) {
          const kind = this.kind;
          if (kind >= 0 && item instanceof Map) sources.record(item, kind);
          lastMember = sources.member(lastMember, "", -1, -1, idx, this.next, kind);
        }
        idx = this.skipWhitespace(this.next);
        if (idx <= endIdx && text.charCodeAt(idx) === Ch.CloseBracket) break;
        if (idx > endIdx || text.charCodeAt(idx) !== Ch.Comma) {
          throw syntaxError(text, "Expecting ',' delimiter", idx);
        }
        idx = this.skipWhitespace(idx + 1);
      }
    }
    this.next = idx + 1;
    if (sources !== null) this.kind = sources.container(arr, lastMember, arr.length, false);
    return arr;
  }
}
