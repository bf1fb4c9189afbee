/** Step H: redactions, their disclosures and erasures (verifier.md §3.4). */

import { codedErrorClass } from "../../coded-error.js";
import { sha256Digest } from "../../crypto/digest.js";
import { CanonicalizationError, canonicalBytes } from "../../json/canonical.js";
import { isObject, type JsonObject, type JsonValue, member } from "../../json/value.js";
import { pyEquals, pyTruthy } from "../../py/semantics.js";
import { typeOf, type VerificationContext } from "../context.js";
import { REQUIRED_FIELDS } from "../record-types.js";

export type CommitmentErrorCode = "bad_commitment";
export class CommitmentError extends codedErrorClass<CommitmentErrorCode>("bad_commitment") {
  override readonly name = "CommitmentError";
}

const HEX_PAIR = /^[0-9a-fA-F]{2}$/;
const ASCII_SPACE = new Set([" ", "\t", "\n", "\r", "\f", "\v"]);

/** Python `bytes.fromhex`: ASCII whitespace allowed between byte pairs only. */
export function bytesFromHex(text: string): Buffer {
  const out: number[] = [];
  let i = 0;
  while (i < text.length) {
    if (ASCII_SPACE.has(text[i]!)) {
      i++;
      continue;
    }
    const pair = text.slice(i, i + 2);
    if (!HEX_PAIR.test(pair))
      throw new CommitmentError(`non-hexadecimal number found in fromhex() arg at position ${i}`);
    out.push(Number.parseInt(pair, 16));
    i += 2;
  }
  return Buffer.from(out);
}

/** `commit_field(salt_hex, value)`: sha256 of salt bytes, `|`, canonical bytes of the value. */
export function commitField(saltHex: JsonValue, value: JsonValue): string {
  if (typeof saltHex !== "string") throw new CommitmentError("fromhex() argument must be str");
  const salt = bytesFromHex(saltHex);
  let encoded: Buffer;
  try {
    encoded = canonicalBytes(value);
  } catch (error) {
    if (error instanceof CanonicalizationError) throw new CommitmentError(error.message);
    throw error;
  }
  return sha256Digest(Buffer.concat([salt, Buffer.from("|"), encoded]));
}

interface Redaction {
  path: string;
  redaction: JsonObject;
}

/**
 * Depth-first, member order; the walk does not enter a redaction object. `path` holds the
 * steps to `value` (a member name or a list index), joined into text only for a redaction
 * found: building every value's path text cost more than the rest of the walk.
 */
function collectRedactions(value: JsonValue, path: (string | number)[], found: Redaction[]): void {
  if (isObject(value)) {
    if (value.get("redacted") === true) {
      found.push({ path: pathText(path), redaction: value });
      return;
    }
    for (const [key, item] of value) {
      path.push(key);
      collectRedactions(item, path, found);
      path.pop();
    }
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      collectRedactions(value[i]!, path, found);
      path.pop();
    }
  }
}

/** `receipts[0].body.items[2]`: the first step is the receipt's index. */
function pathText(path: readonly (string | number)[]): string {
  let text = `receipts[${path[0]}]`;
  for (let i = 1; i < path.length; i++) {
    const step = path[i]!;
    text += typeof step === "number" ? `[${step}]` : `.${step}`;
  }
  return text;
}

/** `_required_field_for_path`: a naive split, exactly as the reference does it. */
function isRequiredFieldPath(ctx: VerificationContext, path: string): boolean {
  const parts = path.split(".");
  if (parts.length < 3 || !parts[0]!.startsWith("receipts[") || parts[1] !== "body") return false;
  const index = Number(parts[0]!.slice("receipts[".length, -1));
  const receipt = ctx.wellFormed[index];
  if (receipt === undefined) return false;
  const type = typeOf(receipt);
  const required = typeof type === "string" ? REQUIRED_FIELDS.get(type) : undefined;
  return required?.includes(parts[2]!) ?? false;
}

export function checkRedactions(ctx: VerificationContext): void {
  const map = ctx.bundle.get("disclosure_map");
  const disclosures: JsonObject = isObject(map) ? map : new Map();
  const found: Redaction[] = [];
  for (const [index, receipt] of ctx.wellFormed.entries()) {
    collectRedactions(receipt, [index], found);
  }
  for (const { path, redaction } of found) {
    if (isRequiredFieldPath(ctx, path)) {
      ctx.fail("redacted_required", `required field redacted at ${path}`);
      continue;
    }
    const entry = disclosures.get(path);
    if (isObject(entry) && entry.has("salt") && entry.has("value")) {
      let commitment: string;
      try {
        commitment = commitField(member(entry, "salt"), member(entry, "value"));
      } catch (error) {
        if (!(error instanceof CommitmentError)) throw error;
        ctx.fail("commit_mismatch", `disclosure entry malformed at ${path}`);
        continue;
      }
      if (!pyEquals(commitment, member(redaction, "commit"))) {
        ctx.fail("commit_mismatch", `commit mismatch at ${path}`);
      }
    } else if (pyTruthy(member(redaction, "erased"))) {
      ctx.insufficient(`erased_content:${path}`);
    } else {
      ctx.provisional(`redacted_without_disclosure:${path}`);
    }
  }
}
