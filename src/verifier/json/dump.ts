/**
 * JSON text output in Python's `json.dumps` style.
 *
 * The CLIs print results the way the reference does (`indent=2`, `ensure_ascii=True`),
 * and results can hold parsed values (bigints, floats, Maps), which `JSON.stringify`
 * cannot write faithfully. Floats are written as Python writes them (`1e+16`, `NaN`).
 */
import { reprFloat } from "./py-scalars.js";
import { PyFloat } from "./value.js";

export interface DumpOptions {
  /** Spaces per level; omitted → compact one-line output with `", "`/`": "` like Python. */
  indent?: number;
  /** Escape every non-ASCII character as `\uXXXX` (Python's default). */
  ensureAscii?: boolean;
  /** Separators for one-line output; Python's default is `[", ", ": "]`. */
  separators?: [string, string];
}

const ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

function escapeAscii(value: string): string {
  return value.replace(/[\\"\x00-\x1f\x7f-\uffff]/g, (ch) => {
    const known = ESCAPES[ch];
    if (known) return known;
    return `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}

function encodeString(value: string, ensureAscii: boolean): string {
  if (ensureAscii) return `"${escapeAscii(value)}"`;
  // Python keeps lone surrogates raw with ensure_ascii=False; JSON.stringify escapes them,
  // which is the only representable choice in UTF-8 output.
  return JSON.stringify(value);
}

function floatText(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "Infinity";
  if (value === Number.NEGATIVE_INFINITY) return "-Infinity";
  return reprFloat(value);
}

function entriesOf(value: object): [string, unknown][] | null {
  if (value instanceof Map) return [...value.entries()] as [string, unknown][];
  if (Array.isArray(value)) return null;
  return Object.entries(value).filter(([, v]) => v !== undefined);
}

export function dumpJson(value: unknown, options: DumpOptions = {}): string {
  const ensureAscii = options.ensureAscii ?? true;
  const indent = options.indent;
  const [itemSep, keySep] =
    options.separators ?? (indent === undefined ? [", ", ": "] : [",", ": "]);

  const write = (v: unknown, level: number): string => {
    if (v === null || v === undefined) return "null";
    if (v === true) return "true";
    if (v === false) return "false";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : floatText(v);
    if (typeof v === "bigint") return v.toString();
    if (typeof v === "string") return encodeString(v, ensureAscii);
    if (v instanceof PyFloat) return floatText(v.value);
    if (typeof v !== "object") throw new TypeError(`cannot serialise ${typeof v}`);
    const newline = indent === undefined ? "" : `\n${" ".repeat(indent * (level + 1))}`;
    const closing = indent === undefined ? "" : `\n${" ".repeat(indent * level)}`;
    const entries = entriesOf(v);
    if (entries === null) {
      const items = v as unknown[];
      if (items.length === 0) return "[]";
      return `[${newline}${items.map((item) => write(item, level + 1)).join(itemSep + newline)}${closing}]`;
    }
    if (entries.length === 0) return "{}";
    const parts = entries.map(
      ([k, item]) => `${encodeString(k, ensureAscii)}${keySep}${write(item, level + 1)}`,
    );
    return `{${newline}${parts.join(itemSep + newline)}${closing}}`;
  };
  return write(value, 0);
}

/** Compact standard JSON (`,`/`:` separators, UTF-8), for HTTP bodies and files. */
export function dumpCompact(value: unknown): string {
  return dumpJson(value, { ensureAscii: false, separators: [",", ":"] });
}
