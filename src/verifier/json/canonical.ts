/**
 * Canonical bytes: the JCS subset the reference signs and hashes.
 *
 * Equivalent to Python's `json.dumps(v, separators=(",", ":"), ensure_ascii=False,
 * sort_keys=True).encode("utf-8")` after a walk that refuses floats:
 * - members sorted by Unicode code point (not UTF-16 code unit);
 * - integers of any size in plain decimal;
 * - strings escaped like `JSON.stringify` (identical to Python's rules once lone
 *   surrogates, which cannot be UTF-8 encoded, have been refused).
 */

import { CodedError } from "../coded-error.js";
import { type JsonValue, PyFloat } from "./value.js";

export type CanonicalFailure = "float" | "lone_surrogate";

export type CanonicalizationErrorCode = "not_canonicalizable";

export class CanonicalizationError extends CodedError<CanonicalizationErrorCode> {
  override readonly name = "CanonicalizationError";
  constructor(
    readonly reason: CanonicalFailure,
    message: string,
  ) {
    super("not_canonicalizable", message, { message });
  }
}

const ABOVE_SURROGATE_START = /[\ud800-\uffff]/;

/** Compares two strings by Unicode code point (lone surrogates by their own value), as Python does. */
export function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x - y;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return a.length - i - (b.length - j);
}

function floatFound(): CanonicalizationError {
  return new CanonicalizationError("float", "floats are not allowed in continuity receipts (v0)");
}

function containsFloat(value: JsonValue): boolean {
  if (value === null || typeof value !== "object") return false;
  if (value instanceof PyFloat) return true;
  if (Array.isArray(value)) return value.some(containsFloat);
  for (const item of value.values()) if (containsFloat(item)) return true;
  return false;
}

class LoneSurrogate {}

/** Strings without these are their own canonical encoding between quotes (the common case). */
const NEEDS_ESCAPE_OR_CHECK = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify` escapes exactly what Python's `ensure_ascii=False` escapes, except lone
 * surrogates (which Python keeps raw and then fails to UTF-8 encode); those are refused here.
 * `raw` keeps them unescaped, to locate them the way Python's encoder error does.
 */
function encodeString(value: string, raw: boolean): string {
  if (!NEEDS_ESCAPE_OR_CHECK.test(value)) return `"${value}"`;
  if (value.isWellFormed()) return JSON.stringify(value);
  if (!raw) throw new LoneSurrogate();
  return JSON.stringify(value).replace(
    /\\u(d[89a-f][0-9a-f]{2})/g,
    (match, code: string, at: number, all: string) => {
      // Only unescape escapes JSON.stringify produced for lone surrogates, not "\\\\u…" text.
      let slashes = 0;
      for (let i = at - 1; i >= 0 && all[i] === "\\"; i--) slashes++;
      return slashes % 2 === 0 ? String.fromCharCode(Number.parseInt(code, 16)) : match;
    },
  );
}

/** A string as canonical encoding writes it, quotes included; null when it holds a lone surrogate. */
export function encodeCanonicalString(value: string): string | null {
  try {
    return encodeString(value, false);
  } catch (error) {
    if (error instanceof LoneSurrogate) return null;
    throw error;
  }
}

function serialize(value: JsonValue, omitTopLevelKey: string | null, raw: boolean): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
    case "bigint":
      return String(value);
    case "string":
      return encodeString(value, raw);
  }
  if (value instanceof PyFloat) throw floatFound();
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      out += serialize(value[i]!, null, raw);
    }
    return `${out}]`;
  }
  const keys: string[] = [];
  for (const key of value.keys()) if (key !== omitTopLevelKey) keys.push(key);
  // Code-unit order equals code-point order unless a key holds a unit from U+D800 up.
  if (keys.some((key) => ABOVE_SURROGATE_START.test(key))) keys.sort(compareCodePoints);
  else keys.sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (i > 0) out += ",";
    out += `${encodeString(key, raw)}:${serialize(value.get(key)!, null, raw)}`;
  }
  return `${out}}`;
}

/** Python's `UnicodeEncodeError` text for the first run of lone surrogates in `text`. */
function surrogateError(text: string): CanonicalizationError {
  let position = 0;
  for (let i = 0; i < text.length; i++, position++) {
    const c = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++;
      continue;
    }
    if (c < 0xd800 || c > 0xdfff) continue;
    let end = i + 1;
    while (end < text.length) {
      const d = text.charCodeAt(end);
      const after = text.charCodeAt(end + 1);
      if (d < 0xd800 || d > 0xdfff || (d <= 0xdbff && after >= 0xdc00 && after <= 0xdfff)) break;
      end++;
    }
    const count = end - i;
    const message =
      count === 1
        ? `'utf-8' codec can't encode character '\\u${c.toString(16)}' in position ${position}: surrogates not allowed`
        : `'utf-8' codec can't encode characters in position ${position}-${position + count - 1}: surrogates not allowed`;
    return new CanonicalizationError("lone_surrogate", message);
  }
  return new CanonicalizationError(
    "lone_surrogate",
    "'utf-8' codec can't encode: surrogates not allowed",
  );
}

/** Canonical JSON text of `value`. Throws `CanonicalizationError` for floats or lone surrogates. */
export function canonicalText(value: JsonValue, omitTopLevelKey: string | null = null): string {
  try {
    return serialize(value, omitTopLevelKey, false);
  } catch (error) {
    if (!(error instanceof LoneSurrogate)) throw error;
  }
  // Python walks for floats before encoding anything, so a float anywhere wins.
  if (value instanceof Map) {
    for (const [key, item] of value)
      if (key !== omitTopLevelKey && containsFloat(item)) throw floatFound();
  } else if (containsFloat(value)) throw floatFound();
  throw surrogateError(serialize(value, omitTopLevelKey, true));
}

/** Canonical UTF-8 bytes of `value`. */
export function canonicalBytes(value: JsonValue, omitTopLevelKey: string | null = null): Buffer {
  return Buffer.from(canonicalText(value, omitTopLevelKey), "utf8");
}
