/**
 * The signature of a self-signed statement: `sig = {alg: "ed25519", key, value}` made by
 * `issuer` over the JCS bytes of the statement without `sig` (verification receipts, check 11
 * of verifier.md §9; context notarizations sign the same way). One check, so the two kinds of
 * statement cannot come to disagree on what a valid signature is.
 */
import { CanonicalizationError, canonicalBytes } from "../json/canonical.js";
import { isObject, type JsonObject, member } from "../json/value.js";
import { verifyEd25519 } from "./ed25519.js";

export type StatementSignatureProblem = "bad_signature_shape" | "bad_signature";

/** Null when `sig` is well formed, names `issuer` and verifies; otherwise what is wrong. */
export function statementSignatureProblem(statement: JsonObject): StatementSignatureProblem | null {
  const sig = member(statement, "sig");
  if (!isObject(sig)) return "bad_signature_shape";
  const key = member(sig, "key");
  const value = member(sig, "value");
  if (
    member(sig, "alg") !== "ed25519" ||
    typeof key !== "string" ||
    typeof value !== "string" ||
    value === ""
  ) {
    return "bad_signature_shape";
  }
  const issuer = member(statement, "issuer");
  if (typeof issuer !== "string" || issuer === "" || key !== issuer) return "bad_signature";
  let message: Buffer;
  try {
    message = canonicalBytes(statement, "sig");
  } catch (error) {
    if (error instanceof CanonicalizationError) return "bad_signature";
    throw error;
  }
  return verifyEd25519(issuer, message, value) ? null : "bad_signature";
}
