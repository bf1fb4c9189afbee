/**
 * The `wm.context-notarization` statement (version 1): the service's signed word that a
 * caller presented these digests and claims at `issued_at`. It is signed the way verification
 * receipts are (src/verifier/verification-receipt/issue.ts): Ed25519 over the JCS canonical
 * bytes of the statement without `sig`, `sig = {alg: "ed25519", key: <issuer did:key>,
 * value: <base64url, unpadded>}`. Its digest is the SHA-256 of those same bytes, so the
 * digest names the statement whatever its signature.
 */
import { recordDigest } from "../verifier/crypto/digest.js";
import { type Ed25519Signer, ed25519Signature } from "../verifier/crypto/ed25519.js";
import { CanonicalizationError, canonicalBytes } from "../verifier/json/canonical.js";
import { dumpCompact } from "../verifier/json/dump.js";
import type { JsonObject, JsonValue } from "../verifier/json/value.js";
import { formatUtcSeconds } from "../verifier/timestamps.js";
import { NotarizationError } from "./errors.js";
import { type NotarizationRequest, REQUEST_FIELDS } from "./request.js";

export const NOTARIZATION_KIND = "wm.context-notarization";
export const NOTARIZATION_VERSION = 1;
/** What `GET /notarize` names as the specification this service speaks. */
export const NOTARIZATION_SPEC = "wm.context-notarization/1.0";

/**
 * The stored document's `note`: what the statement does and does not prove, for a reader who
 * finds one without the docs.
 */
export const NOTARIZATION_NOTE =
  "The service signed these caller-supplied digests and claims at issued_at; it never saw " +
  "the context or execution behind them. Check sig against issuer and recompute the digest " +
  "over the JCS bytes of the statement without sig (receiptd notarization verify).";

export interface IssueNotarizationOptions {
  /** The instant to date the statement (default: now), written in whole UTC seconds. */
  now?: () => Date;
}

export interface IssuedNotarization {
  /** The signed statement, members in the order issue 28 lists them. */
  statement: JsonObject;
  /** `sha256:<hex>` of the statement's canonical bytes without `sig`. */
  digest: string;
}

/** Lower-case hex of a `sha256:<hex>` digest: the path segment of `/notarize/<hex>`. */
export function digestHex(digest: string): string {
  return digest.slice("sha256:".length);
}

/**
 * Signs a statement for a request that `parseNotarizationRequest` accepted. Two calls with the
 * same request give two statements (their `issued_at`, hence their digests, differ unless they
 * fall in the same second). Throws `NotarizationError` `invalid_canonical_statement` when a
 * string holds a lone surrogate, which has no canonical (UTF-8) form.
 */
export function issueNotarization(
  request: NotarizationRequest,
  signer: Ed25519Signer,
  options: IssueNotarizationOptions = {},
): IssuedNotarization {
  const statement: JsonObject = new Map<string, JsonValue>([
    ["kind", NOTARIZATION_KIND],
    ["version", NOTARIZATION_VERSION],
    ["issued_at", formatUtcSeconds(options.now?.() ?? new Date())],
    ["issuer", signer.did],
  ]);
  for (const name of REQUEST_FIELDS) {
    const value = request[name];
    if (value === undefined) continue;
    statement.set(name, typeof value === "string" ? value : new Map(value));
  }
  let signed: Buffer;
  try {
    signed = canonicalBytes(statement);
  } catch (error) {
    if (!(error instanceof CanonicalizationError)) throw error;
    throw new NotarizationError(
      "invalid_canonical_statement",
      `the statement has no canonical form: ${error.message}`,
    );
  }
  statement.set("sig", ed25519Signature(signer, signed));
  return { statement, digest: recordDigest(statement) };
}

/** `POST /notarize`'s answer. */
export interface NotarizationAnswer {
  notarized: true;
  digest: string;
  receipt: JsonObject;
  service: string;
  lookup_url: string;
}

export function notarizationAnswer(
  issued: IssuedNotarization,
  service: string,
): NotarizationAnswer {
  return {
    notarized: true,
    digest: issued.digest,
    receipt: issued.statement,
    service,
    lookup_url: `/notarize/${digestHex(issued.digest)}`,
  };
}

/**
 * The stored document `{notarization, notarization_digest, stored_at, service, note}`, as the
 * compact JSON bytes `GET /notarize/{digest}` serves (its ETag is derived from them).
 */
export function notarizationDocument(
  issued: IssuedNotarization,
  service: string,
  storedAt: Date = new Date(),
): Uint8Array {
  return Buffer.from(
    dumpCompact(
      new Map<string, JsonValue>([
        ["notarization", issued.statement],
        ["notarization_digest", issued.digest],
        ["stored_at", formatUtcSeconds(storedAt)],
        ["service", service],
        ["note", NOTARIZATION_NOTE],
      ]),
    ),
    "utf8",
  );
}
