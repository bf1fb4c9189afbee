/**
 * Python's `repr()` and `str()` for JSON values.
 *
 * Error details and reason suffixes of the reference are built with them
 * (`type='x'`, `seq None != position 3`, `{'minor': 5000, 'currency': 'USD'}`), so they are
 * reproduced exactly, including the quote choice and escaping rules of `str.__repr__`.
 */
import { type JsonValue, PyFloat } from "../json/value.js";

const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
const ALL_PLAIN = /^[\x20-\x26\x28-\x5b\x5d-\x7e]*$/;

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, "0");
}

/** `repr(s)` for a Python `str`. */
export function reprString(value: string): string {
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  if (ALL_PLAIN.test(value)) return quote + value + quote;
  let out = quote;
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += `\\x${hex(code, 2)}`;
    else if (code < 0x7f) out += ch;
    else if (!NON_PRINTABLE.test(ch)) out += ch;
    else if (code <= 0xff) out += `\\x${hex(code, 2)}`;
    else if (code <= 0xffff) out += `\\u${hex(code, 4)}`;
    else out += `\\U${hex(code, 8)}`;
  }
  return out + quote;
}

/** `repr(x)` for a Python `float` (the shortest round-trip form, 'r' format). */
export function reprFloat(value: number): string {
  if (Number.isNaN(value)) return "nan";
  if (value === Number.POSITIVE_INFINITY) return "inf";
  if (value === Number.NEGATIVE_INFINITY) return "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const sign = value < 0 ? "-" : "";
  const [mantissa, exponent] = Math.abs(value).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const decimalPoint = Number(exponent) + 1;
  if (decimalPoint > -4 && decimalPoint <= 16) {
    if (decimalPoint <= 0) return `${sign}0.${"0".repeat(-decimalPoint)}${digits}`;
    if (decimalPoint >= digits.length) {
      return `${sign}${digits}${"0".repeat(decimalPoint - digits.length)}.0`;
    }
    return `${sign}${digits.slice(0, decimalPoint)}.${digits.slice(decimalPoint)}`;
  }
  const exp = decimalPoint - 1;
  const expText = `${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${head}e${expText}`;
}

/** Python `repr()` of a parsed JSON value. */
export function pyRepr(value: JsonValue | undefined): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "string") return reprString(value);
  if (value instanceof PyFloat) return reprFloat(value.value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  const parts: string[] = [];
  for (const [k, v] of value) parts.push(`${reprString(k)}: ${pyRepr(v)}`);
  return `{${parts.join(", ")}}`;
}

/** Python `str()` of a parsed JSON value: strings verbatim, everything else as `repr()`. */
export function pyStr(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : pyRepr(value);
}
