/**
 * Python's `repr()` of a `str` and of a `float`: the JSON parser words its errors with the
 * first, and `dump` writes floats with the second, as Python's `json` does. They live here,
 * not in py/, because py/ is built on json/ (its values): json/ importing py/ made the two
 * folders a circle. `py/repr.ts` builds `repr()` of whole values on top of these.
 */

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
