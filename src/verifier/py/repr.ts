/**
 * Python's `repr()` and `str()` for JSON values.
 *
 * Error details and reason suffixes of the reference are built with them
 * (`type='x'`, `seq None != position 3`, `{'minor': 5000, 'currency': 'USD'}`), so they are
 * reproduced exactly, including the quote choice and escaping rules of `str.__repr__`.
 */
import { reprFloat, reprString } from "../json/py-scalars.js";
import { type JsonValue, PyFloat } from "../json/value.js";

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
