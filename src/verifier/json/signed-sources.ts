/**
 * The signed bytes of records, read from the input they were parsed from.
 *
 * A receipt is signed and hashed over its canonical bytes without `sig` (`canonicalBytes(r,
 * "sig")`). Producers write receipts in canonical form, so the input usually holds those
 * bytes already, with only the `sig` member in between: encoding the parsed value again
 * rebuilds, byte for byte, text that is in the input.
 *
 * The parser (`parseSigned`) records an object here only when its text is exactly what
 * canonical encoding writes for its value:
 * - no whitespace anywhere inside it;
 * - no escape in any string or member name (an unescaped string is written back as read:
 *   the parser refuses raw control characters, and raw lone surrogates cannot be UTF-8);
 * - numbers are integer tokens other than `-0` (`String(value)` gives back such a token;
 *   fractions, exponents, `NaN` and `Infinity` are floats, which canonical encoding refuses);
 * - members in strictly increasing code-point order at every level;
 * - a `sig` member at its own top level.
 * Removing one member (with one comma) from such a text leaves the canonical text of the rest.
 * Anything else is not recorded, and callers encode the value as before.
 *
 * The record is valid for the parsed values as they came out of the parser: it belongs to one
 * verification of one parsed document, which never changes the values it reads.
 */
import type { JsonObject } from "./value.js";

interface Span {
  start: number;
  /** `[cutStart, cutEnd)` is the `sig` member with the comma that joins it to a neighbour. */
  cutStart: number;
  cutEnd: number;
  end: number;
}

export class SignedSources {
  readonly #spans = new Map<JsonObject, Span>();
  #text = "";
  /** The input bytes, when text offsets are byte offsets (an ASCII input, not translated). */
  #bytes: Uint8Array | null = null;

  /** Called once by the parser, before it records anything. */
  attach(text: string, bytes: Uint8Array | null): void {
    this.#text = text;
    this.#bytes = bytes;
  }

  /**
   * `object` spans `[start, end)` of the text and is in canonical form; its `sig` member
   * spans `[sigStart, sigEnd)`.
   */
  record(object: JsonObject, start: number, sigStart: number, sigEnd: number, end: number): void {
    // The member goes with the comma before it, or, when it is first, with the one after it.
    const first = sigStart === start + 1;
    const cutStart = first ? sigStart : sigStart - 1;
    const cutEnd = first && sigEnd < end - 1 ? sigEnd + 1 : sigEnd;
    this.#spans.set(object, { start, cutStart, cutEnd, end });
  }

  /** `canonicalBytes(record, "sig")` when the input spelled `record` canonically, else null. */
  unsignedBytes(record: JsonObject): Buffer | null {
    const span = this.#spans.get(record);
    if (span === undefined) return null;
    const { start, cutStart, cutEnd, end } = span;
    const bytes = this.#bytes;
    if (bytes === null) {
      const text = this.#text;
      return Buffer.from(text.slice(start, cutStart) + text.slice(cutEnd, end), "utf8");
    }
    const head = cutStart - start;
    const out = Buffer.allocUnsafe(head + end - cutEnd);
    out.set(bytes.subarray(start, cutStart), 0);
    out.set(bytes.subarray(cutEnd, end), head);
    return out;
  }

  /** How many records the parser found in canonical form. */
  get size(): number {
    return this.#spans.size;
  }
}
