/**
 * Lease and day-pass tokens (service.md §9): issued once a payment for a pass route has
 * settled, then presented instead of paying again until they expire.
 *
 * Form: `pass_<payload>.<signature>`, both base64url without padding. The payload is compact
 * JSON `{v, iss, kind, scope, payer, net, tx, iat, exp}` (members in that order); the
 * signature is Ed25519 by the service key over the ASCII bytes `receiptd-pass/1.<payload>`,
 * a prefix no other signed object of the service starts with, so a pass signature can never
 * pass for a receipt's or the other way round.
 *
 * Presented as `X-Pass-Token: <token>` or `Authorization: Bearer <token>`; the `pass_` prefix
 * tells it from an API key (`svc_…`). A pass is valid only under an issuer the verifier is
 * given (the current service key): rotating the key retires outstanding passes, like the
 * rotation retires the old key itself.
 */

import { CodedError } from "../verifier/coded-error.js";
import { pyB64uDecode } from "../verifier/crypto/base64.js";
import { type Ed25519Signer, signEd25519, verifyEd25519 } from "../verifier/crypto/ed25519.js";
import { dumpCompact } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import { type JsonValue, jsonObject } from "../verifier/json/value.js";
import { isAddressText, isTransactionHash } from "./formats.js";

export const PASS_TOKEN_HEADER = "x-pass-token";
export const PASS_TOKEN_PREFIX = "pass_";
/** Tokens are about 450 characters; anything much longer is not one of ours. */
export const MAX_PASS_TOKEN_CHARS = 1024;
/** Tolerated clock difference between the instance that issued a pass and the one checking it. */
export const PASS_CLOCK_SKEW_SECONDS = 60;
const SIGNING_PREFIX = "receiptd-pass/1.";

export type PassKind = "lease" | "day";

export interface PassClaims {
  /** did:key of the service key that signed it. */
  readonly issuer: string;
  readonly kind: PassKind;
  /** What the pass opens, e.g. `/erc8004/validate` or `/crystals`. */
  readonly scope: string;
  /** The payer's address, as verified. */
  readonly payer: string;
  /** CAIP-2 network of the settlement. */
  readonly network: string;
  /** The settlement transaction hash. */
  readonly tx: string;
  /** Unix seconds. */
  readonly issuedAt: number;
  readonly expiresAt: number;
}

export type PassTokenErrorCode =
  | "pass_malformed"
  | "pass_signature_invalid"
  | "pass_issuer_unknown"
  | "pass_not_yet_valid"
  | "pass_expired"
  | "pass_scope_mismatch";

export class PassTokenError extends CodedError<PassTokenErrorCode> {
  override readonly name = "PassTokenError";
}

export interface IssuePassInput {
  kind: PassKind;
  scope: string;
  payer: string;
  network: string;
  tx: string;
  /** The pass's lifetime (service.md §12: 300 s lease, 86,400 s day pass). */
  lifetimeSeconds: number;
  /** Milliseconds since the epoch (`Date.now` by default). */
  now?: () => number;
}

const SCOPE = /^[A-Za-z0-9_./:-]{1,128}$/;
const NETWORK = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/;
const B64U = /^[A-Za-z0-9_-]+$/;
const MEMBERS = ["v", "iss", "kind", "scope", "payer", "net", "tx", "iat", "exp"];

function signingInput(payload: string): Buffer {
  return Buffer.from(SIGNING_PREFIX + payload, "ascii");
}

export function issuePassToken(
  signer: Ed25519Signer,
  input: IssuePassInput,
): { token: string; claims: PassClaims } {
  if (!SCOPE.test(input.scope)) throw new TypeError(`pass scope '${input.scope}' is not valid`);
  if (!isAddressText(input.payer)) throw new TypeError("pass payer must be an address");
  if (!isTransactionHash(input.tx)) throw new TypeError("pass tx must be a transaction hash");
  if (!NETWORK.test(input.network)) throw new TypeError("pass network must be CAIP-2");
  if (!Number.isSafeInteger(input.lifetimeSeconds) || input.lifetimeSeconds <= 0) {
    throw new TypeError("pass lifetime must be a positive whole number of seconds");
  }
  const issuedAt = Math.floor((input.now ?? Date.now)() / 1000);
  const claims: PassClaims = {
    issuer: signer.did,
    kind: input.kind,
    scope: input.scope,
    payer: input.payer,
    network: input.network,
    tx: input.tx,
    issuedAt,
    expiresAt: issuedAt + input.lifetimeSeconds,
  };
  const json = dumpCompact(
    jsonObject({
      v: 1,
      iss: claims.issuer,
      kind: claims.kind,
      scope: claims.scope,
      payer: claims.payer,
      net: claims.network,
      tx: claims.tx,
      iat: claims.issuedAt,
      exp: claims.expiresAt,
    }),
  );
  const payload = Buffer.from(json, "utf8").toString("base64url");
  const signature = signEd25519(signer, signingInput(payload));
  return { token: `${PASS_TOKEN_PREFIX}${payload}.${signature}`, claims };
}

function malformed(detail: string): PassTokenError {
  return new PassTokenError("pass_malformed", detail);
}

function decodeClaims(payload: string): PassClaims {
  let value: JsonValue;
  try {
    value = parseJson(pyB64uDecode(payload));
  } catch {
    throw malformed("pass payload is not base64url JSON");
  }
  if (!(value instanceof Map) || value.size !== MEMBERS.length) {
    throw malformed("pass payload has the wrong members");
  }
  const [v, iss, kind, scope, payer, net, tx, iat, exp] = MEMBERS.map((key) => value.get(key));
  if (
    v !== 1 ||
    typeof iss !== "string" ||
    (kind !== "lease" && kind !== "day") ||
    typeof scope !== "string" ||
    typeof payer !== "string" ||
    typeof net !== "string" ||
    typeof tx !== "string" ||
    typeof iat !== "number" ||
    typeof exp !== "number"
  ) {
    throw malformed("pass payload has the wrong members");
  }
  return {
    issuer: iss,
    kind,
    scope,
    payer,
    network: net,
    tx,
    issuedAt: iat,
    expiresAt: exp,
  };
}

export interface VerifyPassOptions {
  /** did:keys whose passes are honoured: normally only the current service key's. */
  issuers: readonly string[];
  /** The scope the request needs. */
  scope: string;
  /** Milliseconds since the epoch (`Date.now` by default). */
  now?: () => number;
}

/** Checks form, issuer, signature, validity period and scope, in that order. */
export function verifyPassToken(token: string, options: VerifyPassOptions): PassClaims {
  if (token.length > MAX_PASS_TOKEN_CHARS || !token.startsWith(PASS_TOKEN_PREFIX)) {
    throw malformed("not a pass token");
  }
  const parts = token.slice(PASS_TOKEN_PREFIX.length).split(".");
  const [payload, signature] = parts;
  if (
    parts.length !== 2 ||
    payload === undefined ||
    signature === undefined ||
    !B64U.test(payload) ||
    !B64U.test(signature)
  ) {
    throw malformed("a pass token is pass_<payload>.<signature>");
  }
  const claims = decodeClaims(payload);
  if (!options.issuers.includes(claims.issuer)) {
    throw new PassTokenError("pass_issuer_unknown", "the pass was signed by a retired key");
  }
  if (!verifyEd25519(claims.issuer, signingInput(payload), signature)) {
    throw new PassTokenError("pass_signature_invalid", "the pass signature does not verify");
  }
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  if (claims.issuedAt > now + PASS_CLOCK_SKEW_SECONDS) {
    throw new PassTokenError("pass_not_yet_valid", "the pass was issued in the future");
  }
  if (now >= claims.expiresAt) throw new PassTokenError("pass_expired", "the pass has expired");
  if (claims.scope !== options.scope) {
    throw new PassTokenError("pass_scope_mismatch", `the pass is for ${claims.scope}`);
  }
  return claims;
}

type HeaderValue = string | readonly string[] | undefined;

/**
 * The pass token a request presents, or null: `X-Pass-Token`, else a Bearer credential that
 * starts with `pass_` (any other Bearer value is an API key and not ours to judge).
 */
export function passTokenFromHeaders(
  headers: Readonly<Record<string, HeaderValue>>,
): string | null {
  const direct = headers[PASS_TOKEN_HEADER];
  if (typeof direct === "string") return direct.trim();
  if (direct !== undefined) throw malformed("X-Pass-Token is repeated");
  const authorization = headers.authorization;
  if (typeof authorization !== "string") return null;
  const match = /^Bearer\s+(pass_\S*)\s*$/i.exec(authorization);
  return match?.[1] ?? null;
}
