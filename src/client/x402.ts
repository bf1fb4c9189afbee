/**
 * Paying x402 challenges (protocols.md §1) with a signer the caller supplies. The client calls
 * the hook on a 402 and sends the request again with the header it returns; the hook never
 * sees the request body. `x402ExactPayer` is the hook for the `exact` scheme: an EIP-3009
 * `transferWithAuthorization` signed as x402 SDK clients sign it (validAfter = now − 600 s,
 * validBefore = now + the offer's `maxTimeoutSeconds`, a random 32-byte nonce), sent as v2
 * `PAYMENT-SIGNATURE`. A viem `LocalAccount` is such a signer.
 */
import { randomBytes } from "node:crypto";
import { type Authorization, decodeBase64Json, encodeBase64Json } from "../payments/codec.js";
import { transferWithAuthorizationTypedData } from "../payments/eip3009.js";
import type { Address } from "../payments/formats.js";
import { type ExactRequirement, requirementFromWire } from "../payments/requirements.js";
import { fromPlain, type JsonObject, jsonObject, toPlain } from "../verifier/json/value.js";

/** A 402 as the hook sees it: the decoded v2 `PAYMENT-REQUIRED` header. */
export interface PaymentChallenge {
  /** The offers (`accepts`), as the service sent them. */
  readonly accepts: readonly Readonly<Record<string, unknown>>[];
  /** The v2 `resource` member (`{url, description, mimeType}`). */
  readonly resource: unknown;
  /** The refusal that came with the challenge (`payment_required`, `nonce_already_used`, …). */
  readonly error: string | null;
}

/** The header that carries a payment: v2 `PAYMENT-SIGNATURE` or v1 `X-PAYMENT`. */
export interface PaymentCredential {
  readonly header: "PAYMENT-SIGNATURE" | "X-PAYMENT";
  readonly value: string;
}

/** Answers a challenge with a payment, or null to decline (the call then fails). */
export type PaymentHook = (challenge: PaymentChallenge) => Promise<PaymentCredential | null>;

type Hex = `0x${string}`;

/** What signs the authorization: a viem `LocalAccount` fits. */
export interface TypedDataSigner {
  readonly address: Hex;
  signTypedData(typedData: ReturnType<typeof transferWithAuthorizationTypedData>): Promise<Hex>;
}

/** Reads the `PAYMENT-REQUIRED` header of a 402; null when it is missing or unreadable. */
export function readChallenge(header: string | undefined): PaymentChallenge | null {
  if (header === undefined) return null;
  let plain: unknown;
  try {
    plain = toPlain(decodeBase64Json(header));
  } catch {
    return null;
  }
  if (typeof plain !== "object" || plain === null) return null;
  const { accepts, resource, error } = plain as Record<string, unknown>;
  if (!Array.isArray(accepts)) return null;
  return {
    accepts: accepts.filter(
      (offer): offer is Record<string, unknown> => typeof offer === "object" && offer !== null,
    ),
    resource: resource ?? null,
    error: typeof error === "string" ? error : null,
  };
}

export interface ExactPayerOptions {
  /** Seconds since the epoch (default: the system clock). */
  nowSeconds?: () => number;
  /** Refuse offers above this many atomic units of the asset (default: no limit). */
  maxAmount?: bigint;
}

/** An EIP-3009 authorization and its signature: the `exact` scheme's payment. */
export interface SignedAuthorization {
  authorization: Authorization;
  signature: Hex;
}

/**
 * The authorization an x402 SDK client signs for `requirement` at `nowSeconds`: the whole
 * amount to `payTo`, valid from ten minutes ago (clock skew) until the offer's timeout, under
 * a random 32-byte nonce.
 */
export function exactAuthorization(
  from: Address,
  requirement: ExactRequirement,
  nowSeconds: bigint,
): Authorization {
  return {
    from,
    to: requirement.payTo,
    value: requirement.amount,
    validAfter: nowSeconds - 600n,
    validBefore: nowSeconds + BigInt(requirement.maxTimeoutSeconds),
    nonce: `0x${randomBytes(32).toString("hex")}`,
  };
}

/** Signs `authorization` as EIP-712 `TransferWithAuthorization` on the offer's token. */
export async function signExactAuthorization(
  signer: Pick<TypedDataSigner, "signTypedData">,
  requirement: ExactRequirement,
  authorization: Authorization,
): Promise<SignedAuthorization> {
  const signature = await signer.signTypedData(
    transferWithAuthorizationTypedData(requirement, authorization),
  );
  return { authorization, signature };
}

/** The `payload` member of an `exact` payment (v1 and v2 alike): integers as decimal strings. */
export function exactPayload(signed: SignedAuthorization): JsonObject {
  const { authorization } = signed;
  return jsonObject({
    signature: signed.signature,
    authorization: jsonObject({
      from: authorization.from,
      to: authorization.to,
      value: authorization.value.toString(),
      validAfter: authorization.validAfter.toString(),
      validBefore: authorization.validBefore.toString(),
      nonce: authorization.nonce,
    }),
  });
}

/** The payment hook for the `exact` scheme, signing with `signer`. */
export function x402ExactPayer(
  signer: TypedDataSigner,
  options: ExactPayerOptions = {},
): PaymentHook {
  const nowSeconds = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  return async (challenge) => {
    const offer = challenge.accepts.find((candidate) => candidate.scheme === "exact");
    if (offer === undefined) return null;
    const requirement = requirementFromWire(fromPlain(offer), 2);
    if (options.maxAmount !== undefined && requirement.amount > options.maxAmount) return null;
    const authorization = exactAuthorization(signer.address, requirement, BigInt(nowSeconds()));
    const payment = {
      x402Version: 2,
      resource: challenge.resource,
      accepted: offer,
      payload: exactPayload(await signExactAuthorization(signer, requirement, authorization)),
    };
    return { header: "PAYMENT-SIGNATURE", value: encodeBase64Json(fromPlain(payment)) };
  };
}
