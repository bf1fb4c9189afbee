/**
 * x402 HTTP wire codec (protocols.md §1.2–§1.3), both versions.
 *
 * A 402 carries the v1 JSON body and the v2 `PAYMENT-REQUIRED` header together (v2 clients
 * read the header, v1 clients the body). Payments arrive as `X-PAYMENT` (v1) or
 * `PAYMENT-SIGNATURE` (v2): base64 of UTF-8 JSON. Decoding is strict and total: an oversized
 * header, non-canonical base64, JSON the strict parser refuses (duplicate members included),
 * or a wrong shape is a `PaymentError` with a stable code, never an exception of another kind.
 * Only the `exact` scheme with an EIP-3009 payload is understood; any other scheme is
 * `invalid_scheme`.
 */
import { dumpCompact } from "../verifier/json/dump.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import type { JsonObject, JsonValue } from "../verifier/json/value.js";
import { jsonObject } from "../verifier/json/value.js";
import { PaymentError } from "./errors.js";
import {
  type Address,
  type Hex,
  isAddressText,
  isBytes32,
  isHexBytes,
  parseUint256,
} from "./formats.js";
import type { NetworkInfo, PaymentRequirementSet } from "./requirements.js";

/** Header names, lower-case as Node exposes request headers. */
export const PAYMENT_HEADERS = {
  /** v2 challenge (response). */
  required: "payment-required",
  /** v2 payment (request). */
  signature: "payment-signature",
  /** v1 payment (request). */
  xPayment: "x-payment",
  /** v2 settlement receipt (response). */
  response: "payment-response",
  /** v1 settlement receipt (response). */
  xPaymentResponse: "x-payment-response",
} as const;

/**
 * A v1 payment header is about 600 characters and a v2 one about 1,200; 8 KiB leaves room for
 * `extensions` while staying under common proxy header limits.
 */
export const MAX_PAYMENT_HEADER_CHARS = 8192;

/** The longest signature accepted as text: 65 bytes is ECDSA; longer are smart wallets. */
const MAX_SIGNATURE_BYTES = 2048;

export interface Authorization {
  readonly from: Address;
  readonly to: Address;
  readonly value: bigint;
  readonly validAfter: bigint;
  readonly validBefore: bigint;
  readonly nonce: Hex;
}

export interface ExactEvmPayload {
  readonly signature: Hex;
  readonly authorization: Authorization;
}

interface PaymentPayloadCommon {
  readonly scheme: "exact";
  /** v1: the v1 network name; v2: `accepted.network` (CAIP-2). */
  readonly network: string;
  readonly payload: ExactEvmPayload;
  /** The decoded object as the client sent it, forwarded verbatim to the facilitator. */
  readonly raw: JsonObject;
}

export interface PaymentPayloadV1 extends PaymentPayloadCommon {
  readonly x402Version: 1;
}

export interface PaymentPayloadV2 extends PaymentPayloadCommon {
  readonly x402Version: 2;
  /** The requirement the client chose, verbatim (matched by deep equality). */
  readonly accepted: JsonObject;
}

export type PaymentPayload = PaymentPayloadV1 | PaymentPayloadV2;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function encodeBase64Json(value: unknown): string {
  return Buffer.from(dumpCompact(value), "utf8").toString("base64");
}

/**
 * Padded standard base64 of strict JSON. Non-canonical base64 (stray bits in the last
 * character) is refused too, so one payment has one header spelling.
 */
export function decodeBase64Json(text: string, maxChars = MAX_PAYMENT_HEADER_CHARS): JsonValue {
  if (text.length > maxChars) {
    throw new PaymentError("payment_header_too_large", `header exceeds ${maxChars} characters`);
  }
  if (text.length === 0 || !BASE64.test(text)) {
    throw new PaymentError("invalid_payment_encoding", "header is not padded standard base64");
  }
  const bytes = Buffer.from(text, "base64");
  if (bytes.toString("base64") !== text) {
    throw new PaymentError("invalid_payment_encoding", "header is not canonical base64");
  }
  try {
    return parseJson(bytes);
  } catch (error) {
    if (error instanceof StrictJsonError) {
      throw new PaymentError("invalid_payment_json", `header JSON: ${error.message}`);
    }
    throw error;
  }
}

function shapeError(detail: string): PaymentError {
  return new PaymentError("invalid_payload", detail);
}

function objectMember(object: JsonObject, key: string, path: string): JsonObject {
  const value = object.get(key);
  if (!(value instanceof Map)) throw shapeError(`${path}${key} must be an object`);
  return value;
}

function stringMember(object: JsonObject, key: string, path: string): string {
  const value = object.get(key);
  if (typeof value !== "string") throw shapeError(`${path}${key} must be a string`);
  return value;
}

function addressMember(object: JsonObject, key: string, path: string): Address {
  const value = stringMember(object, key, path);
  if (!isAddressText(value)) throw shapeError(`${path}${key} must be a 0x address`);
  return value;
}

function uintMember(object: JsonObject, key: string, path: string): bigint {
  const value = parseUint256(stringMember(object, key, path));
  if (value === null) throw shapeError(`${path}${key} must be a uint256 decimal string`);
  return value;
}

function optionalObject(object: JsonObject, key: string): void {
  if (object.has(key) && !(object.get(key) instanceof Map)) {
    throw shapeError(`${key} must be an object when present`);
  }
}

/** The EIP-3009 authorization and signature of an `exact` EVM payment. */
export function parseExactEvmPayload(value: JsonValue | undefined): ExactEvmPayload {
  if (!(value instanceof Map)) throw shapeError("payload must be an object");
  const signature = stringMember(value, "signature", "payload.");
  if (!isHexBytes(signature) || signature.length > 2 + 2 * MAX_SIGNATURE_BYTES) {
    throw shapeError("payload.signature must be 0x-prefixed hex bytes");
  }
  const auth = objectMember(value, "authorization", "payload.");
  const path = "payload.authorization.";
  const nonce = stringMember(auth, "nonce", path);
  if (!isBytes32(nonce)) throw shapeError(`${path}nonce must be 0x + 64 hex (bytes32)`);
  return {
    signature,
    authorization: {
      from: addressMember(auth, "from", path),
      to: addressMember(auth, "to", path),
      value: uintMember(auth, "value", path),
      validAfter: uintMember(auth, "validAfter", path),
      validBefore: uintMember(auth, "validBefore", path),
      nonce,
    },
  };
}

/**
 * A decoded payment payload object (from a header, or from a facilitator request body).
 * `expectedVersion` is the version its carrier implies (`X-PAYMENT` is v1, `PAYMENT-SIGNATURE`
 * v2); a payload claiming another is `invalid_x402_version`.
 */
export function parsePaymentPayload(value: JsonValue, expectedVersion?: 1 | 2): PaymentPayload {
  if (!(value instanceof Map)) throw shapeError("payment payload must be a JSON object");
  const version = value.get("x402Version");
  if (version !== 1 && version !== 2) {
    throw new PaymentError("invalid_x402_version", "x402Version must be 1 or 2");
  }
  if (expectedVersion !== undefined && version !== expectedVersion) {
    throw new PaymentError(
      "invalid_x402_version",
      `x402Version ${version} in a v${expectedVersion} payment`,
    );
  }
  if (version === 1) {
    const scheme = stringMember(value, "scheme", "");
    const network = stringMember(value, "network", "");
    if (scheme !== "exact") throw new PaymentError("invalid_scheme", `scheme '${scheme}'`);
    return {
      x402Version: 1,
      scheme,
      network,
      payload: parseExactEvmPayload(value.get("payload")),
      raw: value,
    };
  }
  const accepted = objectMember(value, "accepted", "");
  const scheme = stringMember(accepted, "scheme", "accepted.");
  const network = stringMember(accepted, "network", "accepted.");
  optionalObject(value, "resource");
  optionalObject(value, "extensions");
  if (scheme !== "exact") throw new PaymentError("invalid_scheme", `scheme '${scheme}'`);
  return {
    x402Version: 2,
    scheme,
    network,
    accepted,
    payload: parseExactEvmPayload(value.get("payload")),
    raw: value,
  };
}

/** Decodes one payment header value: `version` 1 for `X-PAYMENT`, 2 for `PAYMENT-SIGNATURE`. */
export function decodePaymentHeader(
  text: string,
  version: 1 | 2,
  maxChars = MAX_PAYMENT_HEADER_CHARS,
): PaymentPayload {
  return parsePaymentPayload(decodeBase64Json(text, maxChars), version);
}

export type HeaderValue = string | readonly string[] | undefined;

/**
 * The payment a request carries, or null when it carries none. Both headers at once, or one
 * header repeated, is refused rather than guessed at.
 */
export function paymentFromHeaders(
  headers: Readonly<Record<string, HeaderValue>>,
  maxChars = MAX_PAYMENT_HEADER_CHARS,
): PaymentPayload | null {
  const v2 = headers[PAYMENT_HEADERS.signature];
  const v1 = headers[PAYMENT_HEADERS.xPayment];
  if (v2 !== undefined && v1 !== undefined) {
    throw new PaymentError("multiple_payment_headers", "send PAYMENT-SIGNATURE or X-PAYMENT");
  }
  const value = v2 ?? v1;
  if (value === undefined) return null;
  if (typeof value !== "string") {
    throw new PaymentError("multiple_payment_headers", "the payment header is repeated");
  }
  return decodePaymentHeader(value, v2 !== undefined ? 2 : 1, maxChars);
}

/** The v1 402 body `{x402Version: 1, error, accepts}`. */
export function v1ChallengeBody(set: PaymentRequirementSet, error: string): JsonObject {
  return jsonObject({ x402Version: 1, error, accepts: set.options.map((option) => option.v1) });
}

/** The v2 `PaymentRequired` object carried (base64) in `PAYMENT-REQUIRED`. */
export function v2PaymentRequired(set: PaymentRequirementSet, error: string): JsonObject {
  return jsonObject({
    x402Version: 2,
    error,
    resource: jsonObject({
      url: set.resource.url,
      description: set.resource.description,
      mimeType: set.resource.mimeType,
    }),
    accepts: set.options.map((option) => option.v2),
  });
}

export interface EncodedChallenge {
  /** The 402 response body (JSON text). */
  readonly body: string;
  /** The `PAYMENT-REQUIRED` header value. */
  readonly paymentRequired: string;
}

/**
 * Both forms of one 402. `error` is a stable code (`payment_required` when no payment was
 * sent, else why the payment was refused); it is both our error code and x402's `error`.
 */
export function encodeChallenge(
  set: PaymentRequirementSet,
  error = "payment_required",
): EncodedChallenge {
  return {
    body: dumpCompact(v1ChallengeBody(set, error)),
    paymentRequired: encodeBase64Json(v2PaymentRequired(set, error)),
  };
}

export interface SettlementOutcome {
  readonly success: boolean;
  /** The transaction hash; empty when settlement failed. */
  readonly transaction: string;
  readonly payer?: string;
  readonly errorReason?: string;
  /** Atomic units settled (v2 only). */
  readonly amount?: bigint;
}

/**
 * The receipt header for a payment of `x402Version`: `X-PAYMENT-RESPONSE` (v1, v1 network
 * name) or `PAYMENT-RESPONSE` (v2, CAIP-2 network).
 */
export function encodeSettlementResponse(
  x402Version: 1 | 2,
  network: NetworkInfo,
  outcome: SettlementOutcome,
): { name: string; value: string } {
  const body: JsonObject = jsonObject({
    success: outcome.success,
    transaction: outcome.transaction,
    network: x402Version === 1 ? network.v1Name : network.caip2,
  });
  if (outcome.payer !== undefined) body.set("payer", outcome.payer);
  if (outcome.errorReason !== undefined) body.set("errorReason", outcome.errorReason);
  if (x402Version === 2 && outcome.amount !== undefined) {
    body.set("amount", outcome.amount.toString());
  }
  const name = x402Version === 1 ? PAYMENT_HEADERS.xPaymentResponse : PAYMENT_HEADERS.response;
  return { name, value: encodeBase64Json(body) };
}
