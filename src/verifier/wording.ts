/**
 * How a problem names a JSON value. The verifier's results repeat the reference
 * implementation's details byte for byte, and those are built with Python's `repr()`
 * (`kind is None`, `for 'did:key:…'`). An operator reading a command's error message is
 * better served by JSON's own names (`kind is missing`, `kind is null`, `"did:key:…"`).
 */
import { dumpCompact } from "./json/dump.js";
import type { JsonValue } from "./json/value.js";
import { pyRepr } from "./py/repr.js";

export type Wording = "reference" | "json";

const MAX_NAMED_LENGTH = 80;

/** `value` as `wording` names it; an absent member is `missing` in JSON wording. */
export function nameValue(value: JsonValue | undefined, wording: Wording): string {
  if (wording === "reference") return pyRepr(value);
  if (value === undefined) return "missing";
  const text = dumpCompact(value);
  const characters = [...text];
  return characters.length <= MAX_NAMED_LENGTH
    ? text
    : `${characters.slice(0, MAX_NAMED_LENGTH - 1).join("")}…`;
}
