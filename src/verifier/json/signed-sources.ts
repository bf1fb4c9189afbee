/**
 * The signed bytes of records, made from the input they were parsed from.
 *
 * A receipt is signed and hashed over `canonicalBytes(receipt, "sig")`. Encoding the parsed
 * value builds a JS string member by member and then encodes it as UTF-8; but when the input
 * already has members in order (canonical JSON, or `sort_keys` output, pretty-printed or not),
 * every byte of the result is in the input, which the parser just checked. So the parser
 * (`parseSigned`) notes where each object with a `sig` member lies when its members are in
 * code-point order throughout, and `unsignedBytes` copies the input's bytes without whitespace
 * and without `sig`: no string built, nothing decoded. Members out of order are left to the
 * encoder (putting them in order while copying measured slower than the encoder).
 *
 * The copy equals the encoder's output exactly, because it only copies what canonical
 * encoding writes unchanged, and gives up (null: the caller encodes the value) on the rest:
 * - strings and member names without a backslash are copied, quotes included. Canonical
 *   encoding writes a string as itself unless it holds `"`, `\`, a control character or a
 *   lone surrogate; raw `"` ends a string, raw control characters were refused by the parser,
 *   and a raw lone surrogate cannot be UTF-8, so none of them is in such a string. Strings
 *   with escapes give up (canonical escaping differs from many spellings: `\/`, `\u0041`);
 * - integer tokens are copied: JSON has no leading zeros and `String(value)` of an integer
 *   gives back its token, except `-0`, which gives up. Tokens with a fraction or an exponent,
 *   `NaN` and `Infinity` are floats, which canonical encoding refuses: they give up, and the
 *   encoder reports them as it always did;
 * - `true`, `false`, `null` are copied;
 * - members must be in strictly increasing order of their names' bytes, else it gives up (the
 *   parser checked code-point order already; for names without escapes, which are UTF-8, byte
 *   order is code-point order, so the copy checks it again at the cost of a few bytes);
 * - whitespace between tokens is dropped, and so is the top-level `sig` member.
 *
 * A record holds for the values as they came out of the parser: it belongs to one
 * verification of one parsed document, which never changes the values it reads.
 */
import type { JsonObject } from "./value.js";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const DOT = 0x2e;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const ZERO = 0x30;

/** `"sig"` as bytes, quotes included. */
const SIG = Uint8Array.of(QUOTE, 0x73, 0x69, 0x67, QUOTE);

/** Thrown inside the copy when a token is one that canonical encoding would change. */
class NotCopyable {}
const NOT_COPYABLE = new NotCopyable();

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export class SignedSources {
  /** Each noted object's index into `#offsets`, where its start and end follow each other. */
  readonly #spans = new Map<JsonObject, number>();
  readonly #offsets: number[] = [];
  #text = "";
  /** The input bytes, when text offsets are byte offsets (an ASCII input, not translated). */
  #bytes: Uint8Array | null = null;

  /** Called once by the parser, before it records anything. */
  attach(text: string, bytes: Uint8Array | null): void {
    this.#text = text;
    this.#bytes = bytes;
  }

  /**
   * `object` (which has a `sig` member, and members in order throughout) starts at `start` and
   * ends before `end` in the text.
   */
  record(object: JsonObject, start: number, end: number): void {
    this.#spans.set(object, this.#offsets.length);
    this.#offsets.push(start, end);
  }

  /** How many objects the parser noted. */
  get size(): number {
    return this.#spans.size;
  }

  /** `canonicalBytes(record, "sig")` made from the input, or null where that is not possible. */
  unsignedBytes(record: JsonObject): Buffer | null {
    const span = this.#spans.get(record);
    if (span === undefined) return null;
    let start = this.#offsets[span]!;
    let end = this.#offsets[span + 1]!;
    let source = this.#bytes;
    if (source === null) {
      source = Buffer.from(this.#text.slice(start, end), "utf8");
      start = 0;
      end = source.length;
    }
    const copy = new CanonicalCopy(source, Buffer.allocUnsafe(end - start));
    try {
      copy.object(start, true);
    } catch (error) {
      if (error === NOT_COPYABLE) return null;
      throw error;
    }
    return copy.output.subarray(0, copy.length);
  }
}

/**
 * Copies one parsed (so well-formed) value from `source` to `output` in canonical form, in
 * one pass. Canonical form is never longer than the source: it only drops whitespace and `sig`.
 */
class CanonicalCopy {
  length = 0;

  constructor(
    private readonly source: Uint8Array,
    readonly output: Buffer,
  ) {}

  private skipSpace(at: number): number {
    const source = this.source;
    while (isSpace(source[at]!)) at++;
    return at;
  }

  private put(from: number, to: number): void {
    const { source, output } = this;
    let length = this.length;
    for (let i = from; i < to; i++) output[length++] = source[i]!;
    this.length = length;
  }

  /** Copies the value at `at` (no whitespace before it); returns the index after it. */
  private value(at: number): number {
    const c = this.source[at]!;
    if (c === QUOTE) {
      const end = this.stringEnd(at);
      this.put(at, end);
      return end;
    }
    if (c === OPEN_BRACE) return this.object(at, false);
    if (c === OPEN_BRACKET) return this.array(at);
    return this.scalar(at);
  }

  /** The index after the string starting at `at`; gives up on a string with escapes. */
  private stringEnd(at: number): number {
    const source = this.source;
    let i = at + 1;
    for (;;) {
      const c = source[i]!;
      if (c === QUOTE) return i + 1;
      if (c === BACKSLASH) throw NOT_COPYABLE;
      i++;
    }
  }

  /** A number or literal: copied when it is an integer other than `-0`, or true/false/null. */
  private scalar(at: number): number {
    const source = this.source;
    const first = source[at]!;
    // NaN, Infinity and -Infinity are floats.
    if (first === 0x4e || first === 0x49 || (first === MINUS && source[at + 1] === 0x49)) {
      throw NOT_COPYABLE;
    }
    const numeric = first === MINUS || (first >= ZERO && first <= 0x39);
    let end = at;
    for (;;) {
      const c = source[end];
      if (
        c === undefined ||
        c === COMMA ||
        c === CLOSE_BRACE ||
        c === CLOSE_BRACKET ||
        isSpace(c)
      ) {
        break;
      }
      if (numeric && (c === DOT || c === LOWER_E || c === UPPER_E)) throw NOT_COPYABLE;
      end++;
    }
    // `-0` encodes as `0`.
    if (first === MINUS && source[at + 1] === ZERO && end === at + 2) throw NOT_COPYABLE;
    this.put(at, end);
    return end;
  }

  private array(at: number): number {
    const source = this.source;
    this.output[this.length++] = OPEN_BRACKET;
    let i = this.skipSpace(at + 1);
    if (source[i] !== CLOSE_BRACKET) {
      for (;;) {
        i = this.skipSpace(this.value(i));
        if (source[i] === CLOSE_BRACKET) break;
        this.output[this.length++] = COMMA;
        i = this.skipSpace(i + 1);
      }
    }
    this.output[this.length++] = CLOSE_BRACKET;
    return i + 1;
  }

  /**
   * Copies the object at `at` (without `sig` at the top) when its members are in name order;
   * returns the index after it.
   */
  object(at: number, top: boolean): number {
    const source = this.source;
    this.output[this.length++] = OPEN_BRACE;
    let nameStart = -1;
    let nameEnd = -1;
    let copied = false;
    let i = this.skipSpace(at + 1);
    if (source[i] !== CLOSE_BRACE) {
      for (;;) {
        const end = this.stringEnd(i);
        if (nameStart >= 0 && this.compareNames(nameStart, nameEnd, i, end) > 0) {
          throw NOT_COPYABLE;
        }
        nameStart = i;
        nameEnd = end;
        const valueStart = this.skipSpace(this.skipSpace(end) + 1);
        let valueEnd: number;
        if (top && this.isSig(i, end)) {
          // Copied only to find where it ends, then dropped.
          const mark = this.length;
          valueEnd = this.value(valueStart);
          this.length = mark;
        } else {
          if (copied) this.output[this.length++] = COMMA;
          copied = true;
          this.put(i, end);
          this.output[this.length++] = COLON;
          valueEnd = this.value(valueStart);
        }
        i = this.skipSpace(valueEnd);
        if (source[i] === CLOSE_BRACE) break;
        i = this.skipSpace(i + 1);
      }
    }
    this.output[this.length++] = CLOSE_BRACE;
    return i + 1;
  }

  private isSig(from: number, to: number): boolean {
    if (to - from !== SIG.length) return false;
    for (let k = 0; k < SIG.length; k++) if (this.source[from + k] !== SIG[k]) return false;
    return true;
  }

  /** Byte order of the names (quotes excluded) at `[a, aEnd)` and `[b, bEnd)`. */
  private compareNames(a: number, aEnd: number, b: number, bEnd: number): number {
    const source = this.source;
    let i = a + 1;
    let j = b + 1;
    aEnd--;
    bEnd--;
    while (i < aEnd && j < bEnd) {
      const d = source[i]! - source[j]!;
      if (d !== 0) return d;
      i++;
      j++;
    }
    return aEnd - i - (bEnd - j);
  }
}
