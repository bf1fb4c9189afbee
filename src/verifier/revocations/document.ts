/**
 * Revocation documents (verifier.md §7): the list of self-signed statements an issuer
 * publishes outside its bundles. Pure: fetching the bytes lives in `src/io`.
 *
 * Loading checks only the envelope; statements are judged by whoever uses them (bundle
 * step J, verification-receipt check 13). Serving is stricter: `validateRevocationDocument`
 * also checks every statement, because the service must never serve a document it cannot
 * vouch for.
 */
import { CodedError } from "../coded-error.js";
import { type Ed25519Signer, ed25519Signature } from "../crypto/ed25519.js";
import { canonicalBytes } from "../json/canonical.js";
import { parseJson, StrictJsonError } from "../json/parse.js";
import { isArray, isObject, type JsonObject, type JsonValue, member } from "../json/value.js";
import { pyRepr } from "../py/repr.js";
import { pyEquals } from "../py/semantics.js";
import { nameValue, type Wording } from "../wording.js";
import { RevocationsUnusable, verifyStatements } from "./statements.js";

export const REVOCATION_DOCUMENT_KIND = "continuity-receipt-revocations";
/** 1 MiB; exactly this size is allowed. Readers fetch at most one byte more. */
export const MAX_REVOCATION_DOCUMENT_BYTES = 1_048_576;

export type RevocationLoadCode =
  | "bad_revocations_document"
  | "revocations_unreachable"
  | "revocations_insecure_url"
  | "revocations_too_large";

/** A revocation source that cannot be used; `code` is what the CLIs report. */
export class RevocationLoadError extends CodedError<RevocationLoadCode> {
  override readonly name = "RevocationLoadError";
}

function badDocument(detail: string): RevocationLoadError {
  return new RevocationLoadError("bad_revocations_document", detail);
}

/**
 * Whether `value` is a revocation document rather than a statement. A document says so by its
 * `kind`; a statement (`{key, revoked_at, reason?, sig}`) has none.
 */
export function isRevocationDocument(value: JsonValue): value is JsonObject {
  return isObject(value) && member(value, "kind") === REVOCATION_DOCUMENT_KIND;
}

/**
 * `load_statements` for a document already parsed: the envelope checks (an object, kind,
 * version 1, `statements` a list); returns the statements unvalidated. Throws
 * `RevocationLoadError` (`bad_revocations_document`), worded as the reference words it
 * unless `wording` asks for JSON's names.
 */
export function revocationDocumentStatements(
  document: JsonValue,
  wording: Wording = "reference",
): JsonValue[] {
  if (!isObject(document)) throw badDocument("revocation document is not a JSON object");
  const kind = member(document, "kind");
  if (kind !== REVOCATION_DOCUMENT_KIND) {
    const expected = nameValue(REVOCATION_DOCUMENT_KIND, wording);
    // get(), not member(): JSON wording tells a missing member from a null one.
    throw badDocument(`kind is ${nameValue(document.get("kind"), wording)}, expected ${expected}`);
  }
  const version = member(document, "version");
  if (!pyEquals(version, 1)) {
    throw badDocument(`version is ${nameValue(document.get("version"), wording)}, expected 1`);
  }
  const statements = member(document, "statements");
  if (!isArray(statements)) {
    throw badDocument(
      wording === "reference"
        ? "statements is not a list"
        : `statements is ${nameValue(document.get("statements"), wording)}, expected an array`,
    );
  }
  return statements;
}

function readDocument(bytes: Uint8Array): JsonValue {
  if (bytes.length > MAX_REVOCATION_DOCUMENT_BYTES) {
    throw new RevocationLoadError(
      "revocations_too_large",
      `revocation document exceeds ${MAX_REVOCATION_DOCUMENT_BYTES} bytes`,
    );
  }
  try {
    return parseJson(bytes);
  } catch (error) {
    if (error instanceof StrictJsonError) {
      throw badDocument(`revocation document is not valid JSON: ${error.message}`);
    }
    throw error;
  }
}

/**
 * `load_statements` after the bytes are in hand: size, strict UTF-8 JSON, envelope.
 * Throws `RevocationLoadError`.
 */
export function parseRevocationDocument(bytes: Uint8Array): JsonValue[] {
  return revocationDocumentStatements(readDocument(bytes));
}

export function buildRevocationDocument(
  statements: readonly JsonValue[],
  issuedAt?: string,
): JsonObject {
  const document: JsonObject = new Map<string, JsonValue>([
    ["kind", REVOCATION_DOCUMENT_KIND],
    ["version", 1],
  ]);
  if (issuedAt !== undefined) document.set("issued_at", issuedAt);
  document.set("statements", [...statements]);
  return document;
}

export interface RevocationClaim {
  /** When the key stops being trustworthy; must be a real UTC instant. */
  revokedAt: string;
  reason?: JsonValue;
}

/**
 * A statement revoking the signer's own key, signed by that key. The signed statement is
 * put through the same checks verifiers apply, so a `revokedAt` that is not a real UTC
 * instant throws `RangeError`; a reason that cannot be canonicalised (a float) throws
 * `CanonicalizationError`.
 */
export function signRevocationStatement(signer: Ed25519Signer, claim: RevocationClaim): JsonObject {
  const statement: JsonObject = new Map<string, JsonValue>([
    ["key", signer.did],
    ["revoked_at", claim.revokedAt],
  ]);
  if (claim.reason !== undefined) statement.set("reason", claim.reason);
  statement.set("sig", ed25519Signature(signer, canonicalBytes(statement)));
  const problems = validateStatements([statement]);
  if (problems.length > 0) {
    throw new RangeError(
      `revoked_at ${pyRepr(claim.revokedAt)} cannot be used: ${problems.join("; ")}`,
    );
  }
  return statement;
}

function validateStatements(
  statements: readonly JsonValue[],
  wording: Wording = "reference",
): string[] {
  try {
    return verifyStatements(statements, wording).errors;
  } catch (error) {
    if (error instanceof RevocationsUnusable) return [`revocations unusable: ${error.message}`];
    throw error;
  }
}

/**
 * Everything wrong with a document, as readable details; empty when it can be served.
 * Bytes go through the loader's checks first. Unlike loading, every statement must be
 * well formed and carry a valid self-signature. `wording: "json"` names values as JSON does,
 * for messages an operator reads (the default repeats the reference's details).
 */
export function validateRevocationDocument(
  document: JsonValue | Uint8Array,
  wording: Wording = "reference",
): string[] {
  let statements: JsonValue[];
  try {
    statements = revocationDocumentStatements(
      document instanceof Uint8Array ? readDocument(document) : document,
      wording,
    );
  } catch (error) {
    if (error instanceof RevocationLoadError) return [error.detail];
    throw error;
  }
  return validateStatements(statements, wording);
}
