/**
 * Receipt envelopes and their signatures (verifier.md §2, §3.1).
 *
 * The producer API is pure and works on the verifier's own value model, so what it signs
 * is exactly what the verifier hashes: `signReceipt` signs the canonical bytes of the
 * receipt minus `sig`, the view `recordDigest` and step C11 use.
 */
import { type Ed25519Signer, ed25519Signature } from "../crypto/ed25519.js";
import { canonicalBytes } from "../json/canonical.js";
import { fromPlain, isObject, type JsonObject, type JsonValue } from "../json/value.js";

/**
 * What callers may pass where a JSON value is expected: the value model itself, or plain
 * JS data (objects, arrays) that `fromPlain` converts, so bodies can be written as literals.
 */
export type JsonInput = JsonValue | readonly JsonInput[] | { readonly [key: string]: JsonInput };

/** Converts (and deep-copies) producer input into the value model. */
export function toJson(input: JsonInput): JsonValue {
  return fromPlain(input);
}

/** Converts input that must be an object, such as a delivery body. */
export function toJsonObject(input: JsonInput, what: string): JsonObject {
  const value = toJson(input);
  if (!isObject(value)) throw new TypeError(`${what} must be an object`);
  return value;
}

/**
 * A copy of `receipt` whose `sig` covers its canonical bytes minus `sig`. An existing `sig`
 * keeps its position; otherwise `sig` becomes the last member. Revocation statements are
 * self-signed by the same rule (verifier.md §7).
 */
export function signReceipt(receipt: JsonObject, signer: Ed25519Signer): JsonObject {
  const signed = new Map(receipt);
  signed.set("sig", ed25519Signature(signer, canonicalBytes(receipt, "sig")));
  return signed;
}

export interface ReceiptFields {
  spec: string;
  receiptId: string;
  /** Omitted from the envelope when undefined (a bundle without `task_id` matches it). */
  taskId?: JsonInput;
  issuedAt: string;
  issuer: { kind: string; id: string };
  type: string;
  seq: number;
  prev: string | null;
  body: JsonInput;
}

/** An unsigned receipt envelope, members in the order the reference writes them. */
export function receiptEnvelope(fields: ReceiptFields): JsonObject {
  const receipt = new Map<string, JsonValue>([
    ["spec", fields.spec],
    ["receipt_id", fields.receiptId],
  ]);
  if (fields.taskId !== undefined) receipt.set("task_id", toJson(fields.taskId));
  receipt.set("issued_at", fields.issuedAt);
  receipt.set(
    "issuer",
    new Map([
      ["kind", fields.issuer.kind],
      ["id", fields.issuer.id],
    ]),
  );
  receipt.set("type", fields.type);
  receipt.set("seq", fields.seq);
  receipt.set("prev", fields.prev);
  receipt.set("body", toJson(fields.body));
  return receipt;
}
