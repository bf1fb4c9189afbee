/**
 * The JSON value model every verifier module works on.
 *
 * It mirrors what Python's `json.loads` produces, because verdict parity with the
 * Python reference depends on it:
 * - objects are `Map`s, so member order is insertion order for every key
 *   (plain JS objects would hoist integer-like keys and mangle `__proto__`);
 * - integers are `number` when they are safe integers and `bigint` otherwise
 *   (never a bigint inside the safe range, so each integer has one representation);
 * - tokens with a fraction or exponent, and `NaN`/`Infinity`, are `PyFloat`: they must stay
 *   distinguishable from integers because canonical encoding rejects floats;
 * - strings are JS strings; lone surrogates from `\ud800` escapes are kept, as Python keeps them.
 */
export type JsonValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | PyFloat
  | JsonValue[]
  | JsonObject;

export type JsonObject = Map<string, JsonValue>;

/** A JSON number token that Python would have parsed as `float`. */
export class PyFloat {
  constructor(readonly value: number) {}
}

export function isObject(value: JsonValue | undefined): value is JsonObject {
  return value instanceof Map;
}

export function isArray(value: JsonValue | undefined): value is JsonValue[] {
  return Array.isArray(value);
}

export function isString(value: JsonValue | undefined): value is string {
  return typeof value === "string";
}

/** A Python `int` (bools excluded): a safe-integer number or a bigint. */
export function isInteger(value: JsonValue | undefined): value is number | bigint {
  return typeof value === "number" || typeof value === "bigint";
}

/** `obj.get(key)` with Python's `dict.get(key)` default of `None`. */
export function member(obj: JsonObject, key: string): JsonValue {
  const value = obj.get(key);
  return value === undefined ? null : value;
}

/** Builds a `JsonObject` from a plain record, for producers and tests. */
export function jsonObject(entries: Record<string, JsonValue>): JsonObject {
  return new Map(Object.entries(entries));
}

/**
 * Converts plain JS data (objects, arrays, numbers, strings) into the value model.
 * Non-integral numbers become `PyFloat`, unsafe integers become bigints.
 */
export function fromPlain(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "bigint") return normalizeInteger(value);
  if (typeof value === "number") {
    if (Number.isSafeInteger(value)) return value === 0 ? 0 : value;
    return new PyFloat(value);
  }
  if (value instanceof PyFloat) return value;
  if (value instanceof Map) {
    const out: JsonObject = new Map();
    for (const [k, v] of value) out.set(String(k), fromPlain(v));
    return out;
  }
  if (Array.isArray(value)) return value.map(fromPlain);
  if (typeof value === "object") {
    const out: JsonObject = new Map();
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out.set(k, fromPlain(v));
    return out;
  }
  throw new TypeError(`cannot represent ${typeof value} as JSON`);
}

/** Converts the value model back to plain JS data (bigints stay bigints, floats become numbers). */
export function toPlain(value: JsonValue): unknown {
  if (value instanceof PyFloat) return value.value;
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value) {
      Object.defineProperty(out, k, {
        value: toPlain(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  if (Array.isArray(value)) return value.map(toPlain);
  return value;
}

/** Keeps the one-representation rule: safe integers are numbers, the rest bigints. */
export function normalizeInteger(value: bigint): number | bigint {
  if (value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) {
    return Number(value);
  }
  return value;
}
