/**
 * Revocation statements (verifier.md §7): self-signed `{key, revoked_at, sig}` records,
 * their merge and their verification. Used by bundle verification (step J) and by
 * verification-receipt checks (§6.2 step 13).
 */

import { codedErrorClass } from "../coded-error.js";
import { canDecodeDidKey, verifyEd25519 } from "../crypto/ed25519.js";
import { CanonicalizationError, canonicalBytes, canonicalText } from "../json/canonical.js";
import { isObject, type JsonObject, type JsonValue, member } from "../json/value.js";
import { pyRepr } from "../py/repr.js";
import { pyTruthy } from "../py/semantics.js";
import { isValidTimestamp, TimestampCrash, timestampMillis } from "../timestamps.js";
import { nameValue, type Wording } from "../wording.js";

/** A statement whose self-signature verified. */
export interface VerifiedRevocation {
  key: string;
  revokedAt: number;
  statement: JsonObject;
}

export interface StatementCheck {
  revoked: VerifiedRevocation[];
  /** One detail per rejected statement, in order. */
  errors: string[];
}

export type RevocationsUnusableCode = "revocations_unusable";
/**
 * Where the reference raises out of `verify_statements` (a float in a statement, a truthy
 * non-string signature value, a `revoked_at` that is not a real instant). Bundle
 * verification reports it as one `bad_revocation`, "revocations unusable: <message>".
 */
export class RevocationsUnusable extends codedErrorClass<RevocationsUnusableCode>(
  "revocations_unusable",
) {
  override readonly name = "RevocationsUnusable";
}

/** Python's TypeError for `s + "=" * (-len(s) % 4)` on a non-string signature value. */
function nonStringSignatureError(value: JsonValue): string {
  if (Array.isArray(value)) return 'can only concatenate list (not "str") to list';
  if (isObject(value)) return "unsupported operand type(s) for +: 'dict' and 'str'";
  const typeName =
    typeof value === "boolean" ? "bool" : typeof value === "object" ? "float" : "int";
  return `object of type '${typeName}' has no len()`;
}

function fingerprint(statement: JsonObject): string {
  try {
    return `c:${canonicalText(statement)}`;
  } catch (error) {
    if (!(error instanceof CanonicalizationError)) throw error;
    return `r:${pyRepr(statement)}`;
  }
}

/** `merge_statements(*groups)`: concatenate, drop repeated objects (by canonical bytes incl. sig). */
export function mergeStatements(...groups: readonly (readonly JsonValue[])[]): JsonValue[] {
  const seen = new Set<string>();
  const merged: JsonValue[] = [];
  for (const group of groups) {
    for (const statement of group) {
      if (!isObject(statement)) {
        merged.push(statement);
        continue;
      }
      const key = fingerprint(statement);
      if (seen.has(key)) continue;
      seen.add(key);
      merged.push(statement);
    }
  }
  return merged;
}

/** How a statement's key is named in a problem: `for 'did:key:…'`, or JSON's names. */
function forKey(key: JsonValue | undefined, wording: Wording): string {
  return wording === "json" && typeof key !== "string"
    ? `with key ${nameValue(key, wording)}`
    : `for ${nameValue(key, wording)}`;
}

/**
 * `verify_statements`: throws `RevocationsUnusable` where the reference raises. Details repeat
 * the reference's wording unless `wording` asks for JSON's names (operators' messages).
 */
export function verifyStatements(
  statements: readonly JsonValue[],
  wording: Wording = "reference",
): StatementCheck {
  const revoked: VerifiedRevocation[] = [];
  const errors: string[] = [];
  for (const statement of statements) {
    if (!isObject(statement)) {
      errors.push("revocation statement is not an object");
      continue;
    }
    const key = member(statement, "key");
    const revokedAt = member(statement, "revoked_at");
    if (typeof key !== "string" || !isValidTimestamp(revokedAt)) {
      // get(), not member(): JSON wording tells a missing key from a null one.
      errors.push(`malformed revocation statement ${forKey(statement.get("key"), wording)}`);
      continue;
    }
    const sig = member(statement, "sig");
    const value = isObject(sig) ? member(sig, "value") : null;
    if (!isObject(sig) || member(sig, "alg") !== "ed25519" || !pyTruthy(value)) {
      errors.push(`revocation statement unsigned ${forKey(statement.get("key"), wording)}`);
      continue;
    }
    let message: Buffer;
    try {
      message = canonicalBytes(statement, "sig");
    } catch (error) {
      if (error instanceof CanonicalizationError) throw new RevocationsUnusable(error.message);
      throw error;
    }
    if (typeof value !== "string") {
      // The reference decodes the key first (a bad key is just "invalid"), then trips over the value.
      if (canDecodeDidKey(key)) {
        throw new RevocationsUnusable(
          wording === "reference"
            ? nonStringSignatureError(value)
            : `sig.value of the statement ${forKey(key, wording)} is ${nameValue(value, wording)}, not a string`,
        );
      }
      errors.push(`revocation signature invalid ${forKey(key, wording)}`);
      continue;
    }
    if (!verifyEd25519(key, message, value)) {
      errors.push(`revocation signature invalid ${forKey(key, wording)}`);
      continue;
    }
    let revokedAtMillis: number;
    try {
      revokedAtMillis = timestampMillis(revokedAt);
    } catch (error) {
      if (error instanceof TimestampCrash) {
        throw new RevocationsUnusable(
          wording === "reference"
            ? error.message
            : `revoked_at ${nameValue(revokedAt, wording)} of the statement ${forKey(key, wording)} is not a real instant`,
        );
      }
      throw error;
    }
    revoked.push({ key, revokedAt: revokedAtMillis, statement });
  }
  return { revoked, errors };
}
