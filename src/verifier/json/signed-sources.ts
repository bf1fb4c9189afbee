/**
 * The signed bytes of records, spliced from the input they were parsed from.
 *
 * A receipt is signed and hashed over `canonicalBytes(receipt, "sig")`. Encoding the parsed
 * value walks its `Map`s, sorts their names, tests every string for characters to escape and
 * builds a JS string that is then encoded as UTF-8. But almost every byte of the result is
 * already in the input, in some order: the parser (`parseSigned`) notes where each member's
 * name and value lie, and `unsignedBytes` writes the canonical bytes by sorting each object's
 * members by name and copying the input's text of names and values, without whitespace and
 * without the top-level `sig`. Producers write members in insertion order, so this has to
 * work on unsorted input (the copy path before it only took sorted input).
 *
 * The result equals the encoder's exactly, because each token is either copied where
 * canonical encoding writes it unchanged, or written as the encoder writes it:
 * - a string or member name without a backslash is copied, quotes included. Canonical
 *   encoding writes a string as itself unless it holds `"`, `\`, a control character or a
 *   lone surrogate; a raw `"` ends a string, raw control characters were refused by the
 *   parser, and raw text came from valid UTF-8, which cannot hold a lone surrogate. Non-ASCII
 *   characters are written raw by canonical encoding (`ensure_ascii=False`), so they are
 *   copied as UTF-8;
 * - a string with escapes is written from its decoded value with the encoder's own string
 *   encoding (`encodeCanonicalString`); one with a lone surrogate gives up;
 * - integer tokens are copied: JSON has no leading zeros and `String(value)` of an integer
 *   gives back its token, except `-0`, which is written `0`. Tokens with a fraction or an
 *   exponent, `NaN` and `Infinity` are floats, which canonical encoding refuses: they give up;
 * - `true`, `false`, `null` are copied;
 * - members are written in code-point order of their decoded names (code-unit order, the
 *   same thing unless a name holds a unit from U+D800 up, which only an escaped name can in
 *   ASCII input and which then sorts by code point), arrays in order;
 * - whitespace between tokens is dropped, and so is the top-level `sig` member.
 *
 * Giving up returns null, and the caller encodes the value as before, so refusals (floats,
 * lone surrogates) and their wording stay the encoder's.
 *
 * A record holds for the values as they came out of the parser: it belongs to one
 * verification of one parsed document, which never changes the values it reads.
 */
import { compareCodePoints, encodeCanonicalString } from "./canonical.js";
import type { JsonObject, JsonValue } from "./value.js";

/** What a member's value is, where it is not a container (containers are their id, ≥ 0). */
export enum ValueKind {
  /** Written as it is spelled: a string without escapes, an integer, a literal. */
  Verbatim = -1,
  /** A string with escapes: written from its decoded value. */
  Escaped = -2,
  /** `-0`: written `0`. */
  MinusZero = -3,
  /** A float (fraction, exponent, NaN, Infinity): canonical encoding refuses it. */
  Float = -4,
}

// One member (or array element) is `MEMBER_FIELDS` numbers in `#members`.
/** Where its name's token starts; -1 for an array element and for a name with escapes. */
const KEY_START = 0;
const KEY_END = 1;
const VALUE_START = 2;
const VALUE_END = 3;
const KIND = 4;
/** The previous member of the same container, or -1: members are linked, not contiguous. */
const PREVIOUS = 5;
const MEMBER_FIELDS = 6;

// One container is `CONTAINER_FIELDS` numbers in `#containers`.
const LAST_MEMBER = 0;
const COUNT = 1;
const FLAGS = 2;
const CONTAINER_FIELDS = 3;
const IS_OBJECT = 1;
/** Names must be sorted by code point, not code unit. */
const BY_CODE_POINT = 2;

const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const ZERO = 0x30;

/** Thrown inside the splice when a token is one canonical encoding refuses. */
class NotSpliceable {}
const NOT_SPLICEABLE = new NotSpliceable();

/** Above this many characters a copy goes through the platform's `Buffer.write`. */
const NATIVE_COPY_FROM = 96;

function grown(array: Int32Array<ArrayBuffer>, needed: number): Int32Array<ArrayBuffer> {
  if (needed <= array.length) return array;
  const bigger = new Int32Array(Math.max(array.length * 2, needed));
  bigger.set(array);
  return bigger;
}

export class SignedSources {
  /** The document and the objects that are array elements (a bundle's receipts), by id. */
  readonly #records = new Map<JsonObject, number>();
  #members = new Int32Array(0);
  #memberCount = 0;
  /** Per member: its decoded name ("" for an array element). */
  readonly #names: string[] = [];
  #containers = new Int32Array(0);
  /** Per container: the parsed value, whose entries are its members in order. */
  readonly #values: (JsonObject | JsonValue[])[] = [];
  #text = "";
  /** The input's bytes, where they are the text offset for offset (ASCII, not translated). */
  #bytes: Uint8Array | null = null;
  /** Whether every name is sorted by code point: code-unit order differs only from U+D800 up. */
  #byCodePoint = true;

  /**
   * Called once by the parser, before it records anything. In an ASCII text only an escaped
   * name can hold a unit from U+D800 up, so names compare by code unit unless escaped.
   */
  attach(text: string, ascii: boolean, bytes: Uint8Array | null): void {
    this.#text = text;
    this.#bytes = bytes;
    this.#byCodePoint = !ascii;
    // Receipts spend about 25 characters per member and 200 per object; the arrays grow.
    this.#members = new Int32Array(Math.min(text.length >> 5, 1 << 14) * MEMBER_FIELDS + 96);
    this.#containers = new Int32Array(Math.min(text.length >> 7, 1 << 12) * CONTAINER_FIELDS + 24);
  }

  /**
   * A member of the container being scanned; returns its index, the container's new last
   * member. `keyStart` is -1 for an array element and for a name with escapes.
   */
  member(
    previous: number,
    name: string,
    keyStart: number,
    keyEnd: number,
    valueStart: number,
    valueEnd: number,
    kind: number,
  ): number {
    const index = this.#memberCount++;
    const at = index * MEMBER_FIELDS;
    const members = grown(this.#members, at + MEMBER_FIELDS);
    this.#members = members;
    members[at + KEY_START] = keyStart;
    members[at + KEY_END] = keyEnd;
    members[at + VALUE_START] = valueStart;
    members[at + VALUE_END] = valueEnd;
    members[at + KIND] = kind;
    members[at + PREVIOUS] = previous;
    this.#names.push(name);
    return index;
  }

  /** A container whose members are all recorded; returns its id. */
  container(
    value: JsonObject | JsonValue[],
    lastMember: number,
    count: number,
    escapedNames: boolean,
  ): number {
    const id = this.#values.length;
    this.#values.push(value);
    const at = id * CONTAINER_FIELDS;
    const containers = grown(this.#containers, at + CONTAINER_FIELDS);
    this.#containers = containers;
    containers[at + LAST_MEMBER] = lastMember;
    containers[at + COUNT] = count;
    containers[at + FLAGS] = Array.isArray(value)
      ? 0
      : IS_OBJECT | (escapedNames || this.#byCodePoint ? BY_CODE_POINT : 0);
    return id;
  }

  /** `object` (the document or an array element) is container `id`. */
  record(object: JsonObject, id: number): void {
    this.#records.set(object, id);
  }

  /** How many objects can be looked up. */
  get size(): number {
    return this.#records.size;
  }

  /** `canonicalBytes(record, "sig")` made from the input, or null where that is not possible. */
  unsignedBytes(record: JsonObject): Buffer | null {
    const id = this.#records.get(record);
    if (id === undefined) return null;
    const splice = new Splice(
      this.#text,
      this.#bytes,
      this.#members,
      this.#names,
      this.#containers,
      this.#values,
    );
    try {
      splice.object(id, true);
    } catch (error) {
      if (error === NOT_SPLICEABLE) return null;
      throw error;
    }
    return splice.result();
  }
}

/** Writes one container's canonical bytes; the output grows as needed. */
class Splice {
  #output = Buffer.allocUnsafe(2048);
  #length = 0;

  constructor(
    private readonly text: string,
    private readonly bytes: Uint8Array | null,
    private readonly members: Int32Array,
    private readonly names: readonly string[],
    private readonly containers: Int32Array,
    private readonly values: readonly (JsonObject | JsonValue[])[],
  ) {}

  result(): Buffer {
    return this.#output.subarray(0, this.#length);
  }

  #reserve(bytes: number): Buffer {
    const output = this.#output;
    if (this.#length + bytes <= output.length) return output;
    const bigger = Buffer.allocUnsafe(Math.max(output.length * 2, this.#length + bytes));
    output.copy(bigger, 0, 0, this.#length);
    this.#output = bigger;
    return bigger;
  }

  #byte(value: number): void {
    const output = this.#reserve(1);
    output[this.#length++] = value;
  }

  /** The text in `[from, to)` as UTF-8 (raw text holds no lone surrogate: it came from UTF-8). */
  #copy(from: number, to: number): void {
    const bytes = this.bytes;
    if (bytes !== null) {
      const output = this.#reserve(to - from);
      let length = this.#length;
      if (to - from >= NATIVE_COPY_FROM) {
        output.set(bytes.subarray(from, to), length);
        length += to - from;
      } else {
        for (let i = from; i < to; i++) output[length++] = bytes[i]!;
      }
      this.#length = length;
      return;
    }
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const output = this.#reserve((to - from) * 3);
    const text = this.text;
    if (to - from >= NATIVE_COPY_FROM) {
      this.#length += output.write(text.slice(from, to), this.#length, "utf8");
      return;
    }
    let length = this.#length;
    for (let i = from; i < to; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x80) {
        output[length++] = c;
      } else if (c < 0x800) {
        output[length++] = 0xc0 | (c >> 6);
        output[length++] = 0x80 | (c & 0x3f);
      } else if (c >= 0xd800 && c <= 0xdbff) {
        const point = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
        output[length++] = 0xf0 | (point >> 18);
        output[length++] = 0x80 | ((point >> 12) & 0x3f);
        output[length++] = 0x80 | ((point >> 6) & 0x3f);
        output[length++] = 0x80 | (point & 0x3f);
      } else {
        output[length++] = 0xe0 | (c >> 12);
        output[length++] = 0x80 | ((c >> 6) & 0x3f);
        output[length++] = 0x80 | (c & 0x3f);
      }
    }
    this.#length = length;
  }

  /** A decoded string as canonical encoding writes it; a lone surrogate gives up. */
  #encoded(value: string): void {
    const encoded = encodeCanonicalString(value);
    if (encoded === null) throw NOT_SPLICEABLE;
    const output = this.#reserve(encoded.length * 3);
    this.#length += output.write(encoded, this.#length, "utf8");
  }

  /** Writes `member`, an element or member of container `parent`. */
  #value(member: number, parent: number, position: number): void {
    const at = member * MEMBER_FIELDS;
    const members = this.members;
    const kind = members[at + KIND]!;
    if (kind === ValueKind.Verbatim)
      this.#copy(members[at + VALUE_START]!, members[at + VALUE_END]!);
    else if (kind >= 0) {
      if ((this.containers[kind * CONTAINER_FIELDS + FLAGS]! & IS_OBJECT) !== 0) {
        this.object(kind, false);
      } else this.#array(kind);
    } else if (kind === ValueKind.Escaped) {
      const container = this.values[parent]!;
      const value = Array.isArray(container)
        ? container[position]
        : container.get(this.names[member]!);
      this.#encoded(value as string);
    } else if (kind === ValueKind.MinusZero) this.#byte(ZERO);
    else throw NOT_SPLICEABLE;
  }

  /** The container's members in document order. */
  #membersOf(id: number): Int32Array {
    const count = this.containers[id * CONTAINER_FIELDS + COUNT]!;
    const list = new Int32Array(count);
    let member = this.containers[id * CONTAINER_FIELDS + LAST_MEMBER]!;
    for (let i = count - 1; i >= 0; i--) {
      list[i] = member;
      member = this.members[member * MEMBER_FIELDS + PREVIOUS]!;
    }
    return list;
  }

  #array(id: number): void {
    const list = this.#membersOf(id);
    this.#byte(OPEN_BRACKET);
    for (let i = 0; i < list.length; i++) {
      if (i > 0) this.#byte(COMMA);
      this.#value(list[i]!, id, i);
    }
    this.#byte(CLOSE_BRACKET);
  }

  object(id: number, omitSig: boolean): void {
    const list = this.#membersOf(id);
    const names = this.names;
    if ((this.containers[id * CONTAINER_FIELDS + FLAGS]! & BY_CODE_POINT) !== 0) {
      list.sort((a, b) => compareCodePoints(names[a]!, names[b]!));
    } else {
      // Insertion sort: objects are small, and often in order already.
      for (let i = 1; i < list.length; i++) {
        const member = list[i]!;
        const name = names[member]!;
        let j = i - 1;
        while (j >= 0 && names[list[j]!]! > name) {
          list[j + 1] = list[j]!;
          j--;
        }
        list[j + 1] = member;
      }
    }
    const members = this.members;
    this.#byte(OPEN_BRACE);
    let first = true;
    for (let i = 0; i < list.length; i++) {
      const member = list[i]!;
      const name = names[member]!;
      if (omitSig && name === "sig") continue;
      if (!first) this.#byte(COMMA);
      first = false;
      const at = member * MEMBER_FIELDS;
      const keyStart = members[at + KEY_START]!;
      if (keyStart >= 0) this.#copy(keyStart, members[at + KEY_END]!);
      else this.#encoded(name);
      this.#byte(COLON);
      this.#value(member, id, -1);
    }
    this.#byte(CLOSE_BRACE);
  }
}
