/**
 * Python value semantics the reference verifier relies on (verifier.md §11.1):
 * truthiness, `==`, and `int()`. JavaScript's own rules differ on every one of them
 * (`[]` is truthy, `true !== 1`, `parseInt(" 7 ")`…), and verdicts depend on the difference.
 */

import { codedErrorClass } from "../coded-error.js";
import { type JsonValue, PyFloat } from "../json/value.js";

/** Python `bool(x)`. NaN is truthy in Python. */
export function pyTruthy(value: JsonValue | undefined): boolean {
  if (value === null || value === undefined || value === false) return false;
  if (value === true) return true;
  if (typeof value === "number") return value !== 0;
  if (typeof value === "bigint") return value !== 0n;
  if (typeof value === "string") return value.length > 0;
  if (value instanceof PyFloat) return value.value !== 0;
  if (Array.isArray(value)) return value.length > 0;
  return value.size > 0;
}

type Numeric = number | bigint;

/** The numeric value of bools, ints and floats; `null` for everything else. */
function numericValue(value: JsonValue): Numeric | null {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number" || typeof value === "bigint") return value;
  if (value instanceof PyFloat) return value.value;
  return null;
}

/**
 * Python `a == b` for parsed JSON values (deep, key-order-insensitive, `True == 1 == 1.0`).
 * Every parsed NaN is the same Python object, and list/dict comparison checks identity first,
 * so NaN equals NaN inside containers but not at the top.
 */
export function pyEquals(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  return equals(a, b, false);
}

function equals(a: JsonValue | undefined, b: JsonValue | undefined, nested: boolean): boolean {
  a = a === undefined ? null : a;
  b = b === undefined ? null : b;
  if (nested && a instanceof PyFloat && b instanceof PyFloat) {
    if (Number.isNaN(a.value) && Number.isNaN(b.value)) return true;
  }
  if (a === b) return !(a instanceof PyFloat && Number.isNaN(a.value));
  if (a === null || b === null) return false;
  if (typeof a === "string" || typeof b === "string") return false;
  const na = numericValue(a);
  const nb = numericValue(b);
  if (na !== null || nb !== null) {
    if (na === null || nb === null) return false;
    // Loose equality compares number and bigint by exact mathematical value, as Python does.
    // biome-ignore lint/suspicious/noDoubleEquals: exact int/float comparison across number and bigint
    return na == nb;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!equals(a[i], b[i], true)) return false;
    return true;
  }
  const objA = a as Map<string, JsonValue>;
  const objB = b as Map<string, JsonValue>;
  if (objA.size !== objB.size) return false;
  for (const [key, value] of objA) {
    if (!objB.has(key) || !equals(value, objB.get(key), true)) return false;
  }
  return true;
}

export type PyValueErrorCode = "py_value_error";
/** Python raised `TypeError`/`ValueError`: the reference turns these into `malformed`. */
export class PyValueError extends codedErrorClass<PyValueErrorCode>("py_value_error") {
  override readonly name = "PyValueError";
}

export type PyOverflowErrorCode = "py_overflow_error";
/** Python raised something the reference does not catch (`OverflowError` for `int(inf)`). */
export class PyOverflowError extends codedErrorClass<PyOverflowErrorCode>("py_overflow_error") {
  override readonly name = "PyOverflowError";
}

// What int() strips: ASCII whitespace, plus the non-ASCII characters for which str.isspace()
// is true (int() maps those to spaces first). The ASCII separators \x1c-\x1f are not stripped.
const PY_SPACE =
  "[\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const INT_LITERAL = new RegExp(`^${PY_SPACE}*([+-]?)(\\p{Nd}(?:_?\\p{Nd})*)${PY_SPACE}*$`, "u");
const DECIMAL_DIGIT = /\p{Nd}/u;

/** Value of a Unicode decimal digit: Nd characters come in aligned runs of ten. */
function digitValue(ch: string): number {
  const code = ch.codePointAt(0)!;
  if (code <= 0x39) return code - 0x30;
  let start = code;
  while (start > 0 && DECIMAL_DIGIT.test(String.fromCodePoint(start - 1))) start--;
  return (code - start) % 10;
}

/** Python `int(x)` for the value kinds JSON can hold. */
export function pyInt(value: JsonValue): bigint {
  if (typeof value === "boolean") return value ? 1n : 0n;
  if (typeof value === "number") return BigInt(value);
  if (typeof value === "bigint") return value;
  if (value instanceof PyFloat) {
    if (Number.isNaN(value.value)) throw new PyValueError("cannot convert float NaN to integer");
    if (!Number.isFinite(value.value)) {
      throw new PyOverflowError("cannot convert float infinity to integer");
    }
    return BigInt(Math.trunc(value.value));
  }
  if (typeof value === "string") {
    const match = INT_LITERAL.exec(value);
    if (!match) throw new PyValueError(`invalid literal for int() with base 10: ${value}`);
    const digits = [...match[2]!.replaceAll("_", "")].map((d) => digitValue(d)).join("");
    if (digits.length > 4300) {
      throw new PyValueError("Exceeds the limit (4300 digits) for integer string conversion");
    }
    const magnitude = BigInt(digits);
    return match[1] === "-" ? -magnitude : magnitude;
  }
  throw new PyValueError("int() argument must be a string, a bytes-like object or a real number");
}
