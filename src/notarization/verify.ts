/**
 * Offline check of a notarization statement: its shape and claims, its signature, that its
 * issuer is a key the holder trusts, and optionally that it is the statement a digest names.
 * Every check runs and every failure is reported, as for verification receipts.
 *
 * Key rotation: a statement names the key that signed it, so it keeps verifying after the
 * service rotates; the holder passes the retired issuers among the trusted ones together with
 * their retirement statements (what `receiptd rotate-key` publishes at
 * `/revocations/{old issuer}`), and a statement dated at or after its issuer's `revoked_at`
 * is refused, with the same rule verification receipts follow (verifier.md §6.2 step 13).
 */
import { recordDigest } from "../verifier/crypto/digest.js";
import { statementSignatureProblem } from "../verifier/crypto/signed-statement.js";
import { CanonicalizationError } from "../verifier/json/canonical.js";
import { isObject, type JsonObject, type JsonValue, member } from "../verifier/json/value.js";
import {
  RevocationsUnusable,
  type StatementCheck,
  verifyStatements,
} from "../verifier/revocations/statements.js";
import { TimestampCrash, timestampMillis } from "../verifier/timestamps.js";
import { NotarizationError } from "./errors.js";
import { normalizeDigest, parseNotarizationRequest, REQUEST_FIELDS } from "./request.js";
import { NOTARIZATION_KIND, NOTARIZATION_VERSION } from "./statement.js";

export type NotarizationCheckCode =
  | "not_an_object"
  | "bad_kind"
  | "bad_version"
  | "bad_issued_at"
  | "bad_claims"
  | "bad_signature_shape"
  | "bad_signature"
  | "untrusted_issuer"
  | "digest_mismatch"
  | "bad_revocation"
  | "key_revoked";

export interface NotarizationCheck {
  valid: boolean;
  errors: NotarizationCheckCode[];
  issuer: JsonValue;
  issued_at: JsonValue;
  /** `sha256:<hex>` of the statement without `sig`; null when it has no canonical form. */
  digest: string | null;
  /** Null when no expected digest was given. */
  digest_match: boolean | null;
}

export interface VerifyNotarizationOptions {
  /** did:keys whose statements are accepted: the service key and the keys it retired. */
  trustedIssuers: readonly string[];
  /** Revocation statements (e.g. retirements by rotation) to date the issuer's key against. */
  revocations?: readonly JsonValue[];
  /** The digest the statement is expected to have (`sha256:<hex>` or hex, either case). */
  digest?: string;
}

/** What `issueNotarization` writes: whole UTC seconds. */
const ISSUED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const ENVELOPE = new Set(["kind", "version", "issued_at", "issuer", "sig"]);

function issuedAtMillis(value: JsonValue): number | null {
  if (typeof value !== "string" || !ISSUED_AT.test(value)) return null;
  try {
    return timestampMillis(value);
  } catch (error) {
    if (error instanceof TimestampCrash) return null;
    throw error;
  }
}

/**
 * The claims must be what issuance would have written for some valid request: the request's
 * rules hold, no other member is present, and digests are already in normal form.
 */
function claimsValid(statement: JsonObject): boolean {
  const claims: JsonObject = new Map();
  for (const [name, value] of statement) if (!ENVELOPE.has(name)) claims.set(name, value);
  try {
    const request = parseNotarizationRequest(claims);
    for (const name of REQUEST_FIELDS) {
      if (claims.has(name) && request[name] === undefined) return false; // a null member
    }
    return (
      (request.context_digest ?? null) === (claims.get("context_digest") ?? null) &&
      (request.prompt_hash ?? null) === (claims.get("prompt_hash") ?? null)
    );
  } catch (error) {
    if (error instanceof NotarizationError) return false;
    throw error;
  }
}

function revocationErrors(
  revocations: readonly JsonValue[],
  issuer: JsonValue,
  issuedAt: number | null,
): NotarizationCheckCode[] {
  let check: StatementCheck;
  try {
    check = verifyStatements(revocations);
  } catch (error) {
    if (error instanceof RevocationsUnusable) return ["bad_revocation"];
    throw error;
  }
  const found: NotarizationCheckCode[] = check.errors.map(() => "bad_revocation");
  if (issuedAt === null) return found;
  const revoked = check.revoked.some(
    (revocation) => revocation.key === issuer && issuedAt >= revocation.revokedAt,
  );
  if (revoked) found.push("key_revoked");
  return found;
}

function canonicalDigest(statement: JsonObject): string | null {
  try {
    return recordDigest(statement);
  } catch (error) {
    if (error instanceof CanonicalizationError) return null;
    throw error;
  }
}

export function verifyNotarization(
  statement: JsonValue,
  options: VerifyNotarizationOptions,
): NotarizationCheck {
  if (!isObject(statement)) {
    return {
      valid: false,
      errors: ["not_an_object"],
      issuer: null,
      issued_at: null,
      digest: null,
      digest_match: null,
    };
  }
  const errors: NotarizationCheckCode[] = [];
  const issuer = member(statement, "issuer");
  const issuedAt = member(statement, "issued_at");
  const issuedAtTime = issuedAtMillis(issuedAt);

  if (member(statement, "kind") !== NOTARIZATION_KIND) errors.push("bad_kind");
  const version = member(statement, "version");
  if (typeof version !== "number" || version !== NOTARIZATION_VERSION) errors.push("bad_version");
  if (issuedAtTime === null) errors.push("bad_issued_at");
  if (!claimsValid(statement)) errors.push("bad_claims");
  const signatureProblem = statementSignatureProblem(statement);
  if (signatureProblem !== null) errors.push(signatureProblem);
  if (typeof issuer !== "string" || !options.trustedIssuers.includes(issuer)) {
    errors.push("untrusted_issuer");
  }
  const digest = canonicalDigest(statement);
  let digestMatch: boolean | null = null;
  if (options.digest !== undefined) {
    digestMatch = digest !== null && normalizeDigest(options.digest) === digest;
    if (!digestMatch) errors.push("digest_mismatch");
  }
  const revocations = options.revocations ?? [];
  if (revocations.length > 0) errors.push(...revocationErrors(revocations, issuer, issuedAtTime));

  return {
    valid: errors.length === 0,
    errors,
    issuer,
    issued_at: issuedAt,
    digest,
    digest_match: digestMatch,
  };
}
