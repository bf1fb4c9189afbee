/**
 * Local verification of an `exact` EVM payment: an EIP-3009 `TransferWithAuthorization`
 * signed with EIP-712 (protocols.md §1.4–§1.5). It runs before any facilitator call, so a
 * forged, underpaying, expired or misdirected payment is refused without a network round
 * trip. What it cannot know (balance, whether the nonce was already used on chain) is the
 * facilitator's part.
 *
 * The rules mirror what would make the on-chain call revert, so that a payment we accept is
 * one the token contract would accept too:
 * - amount: the authorized value must EQUAL the required amount (the v1 prose says "meets or
 *   exceeds", but both reference implementations require equality);
 * - window: `validAfter < now` (FiatTokenV2 requires `block.timestamp > validAfter`) and
 *   `validBefore >= now + 6` (the SDK's block-time buffer, so the transfer can still land);
 * - signature: exactly 65 bytes `r|s|v`; `v` 27/28 (0/1 accepted as the same recovery ids);
 *   `s <= n/2` (USDC's ECRecover refuses high-s); the recovered signer equals `from`.
 *   Longer signatures (ERC-1271 smart wallets, ERC-6492 wrappers) need an RPC call and are
 *   refused here.
 *
 * viem does the EIP-712 hashing and the recovery. It is loaded on the first payment, not with
 * this module (`evm/viem.ts`): x402 is off in many deployments, and viem at startup cost the
 * web process about 12 MiB of RSS.
 */
import { loadViem } from "../evm/viem.js";
import type { JsonValue } from "../verifier/json/value.js";
import { PyFloat } from "../verifier/json/value.js";
import type { Authorization, PaymentPayload } from "./codec.js";
import { PaymentError } from "./errors.js";
import { type Address, type Hex, isBytes32, sameAddress } from "./formats.js";
import type { ExactRequirement } from "./requirements.js";

export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** secp256k1 group order, and the low-s bound USDC's `ECRecover` enforces. */
export const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
export const SECP256K1_HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/** Seconds `validBefore` must still be ahead of now (SDK block-time buffer). */
export const VALID_BEFORE_MARGIN_SECONDS = 6;

/** The EIP-712 typed data a payer signs for `authorization` under `requirement`'s token. */
export function transferWithAuthorizationTypedData(
  requirement: Pick<ExactRequirement, "network" | "asset" | "domain">,
  authorization: Authorization,
) {
  return {
    domain: {
      name: requirement.domain.name,
      version: requirement.domain.version,
      chainId: requirement.network.chainId,
      verifyingContract: requirement.asset,
    },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization",
    message: {
      from: authorization.from,
      to: authorization.to,
      value: authorization.value,
      validAfter: authorization.validAfter,
      validBefore: authorization.validBefore,
      nonce: authorization.nonce,
    },
  } as const;
}

/** The EIP-712 digest the signature covers. */
export async function authorizationDigest(
  requirement: Pick<ExactRequirement, "network" | "asset" | "domain">,
  authorization: Authorization,
): Promise<Hex> {
  const { hashTypedData } = await loadViem();
  return hashTypedData(transferWithAuthorizationTypedData(requirement, authorization));
}

export interface SignatureParts {
  readonly r: Hex;
  readonly s: Hex;
  readonly yParity: 0 | 1;
}

function signatureError(code: PaymentError["code"], detail: string): PaymentError {
  return new PaymentError(code, detail);
}

/** Splits a 65-byte `r|s|v` signature, enforcing the token contract's `v` and low-s rules. */
export function splitSignature(signature: Hex): SignatureParts {
  const hex = signature.slice(2);
  if (hex.length !== 130) {
    throw signatureError(
      "signature_unsupported_length",
      `signature is ${hex.length / 2} bytes; only 65-byte ECDSA signatures can be checked locally`,
    );
  }
  const r = BigInt(`0x${hex.slice(0, 64)}`);
  const s = BigInt(`0x${hex.slice(64, 128)}`);
  const v = Number.parseInt(hex.slice(128, 130), 16);
  const normalised = v < 27 ? v + 27 : v;
  if (normalised !== 27 && normalised !== 28) {
    throw signatureError("signature_bad_v", `signature v is ${v}; expected 27 or 28`);
  }
  if (s > SECP256K1_HALF_N) {
    throw signatureError("signature_high_s", "signature s is in the upper half of the curve order");
  }
  if (r === 0n || r >= SECP256K1_N || s === 0n) {
    throw signatureError("invalid_exact_evm_payload_signature", "signature r or s out of range");
  }
  return {
    r: `0x${hex.slice(0, 64)}`,
    s: `0x${hex.slice(64, 128)}`,
    yParity: normalised === 27 ? 0 : 1,
  };
}

/** Structural equality of parsed JSON (member order ignored), as the v2 SDK matches `accepted`. */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a instanceof Map) {
    if (!(b instanceof Map) || a.size !== b.size) return false;
    for (const [key, value] of a) {
      if (!b.has(key) || !jsonEqual(value, b.get(key))) return false;
    }
    return true;
  }
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (a instanceof PyFloat) return b instanceof PyFloat && Object.is(a.value, b.value);
  return a === b;
}

/**
 * The requirement a payment answers. v2: the one deep-equal to `accepted`. v1 carries only
 * scheme and network, so among those on its network the one whose amount equals the
 * authorized value is chosen (that is how a v1 lease is told from a day pass).
 */
export function matchRequirement<R extends ExactRequirement>(
  payment: PaymentPayload,
  requirements: readonly R[],
): R {
  if (payment.x402Version === 2) {
    const match = requirements.find((r) => r.v2 !== null && jsonEqual(r.v2, payment.accepted));
    if (match !== undefined) return match;
    if (!requirements.some((r) => r.network.caip2 === payment.network)) {
      throw new PaymentError("invalid_network", `network '${payment.network}' is not accepted`);
    }
    throw new PaymentError(
      "invalid_payment_requirements",
      "accepted does not equal any requirement of this resource",
    );
  }
  const onNetwork = requirements.filter((r) => r.network.v1Name === payment.network);
  const first = onNetwork[0];
  if (first === undefined) {
    throw new PaymentError("invalid_network", `network '${payment.network}' is not accepted`);
  }
  const value = payment.payload.authorization.value;
  return onNetwork.find((r) => r.amount === value) ?? first;
}

/** The rules that need no cryptography; `nowSeconds` is Unix time in whole seconds. */
export function checkAuthorization(
  authorization: Authorization,
  requirement: ExactRequirement,
  nowSeconds: bigint,
  validBeforeMarginSeconds = VALID_BEFORE_MARGIN_SECONDS,
): void {
  if (!isBytes32(authorization.nonce)) {
    throw new PaymentError("invalid_payload", "nonce must be bytes32");
  }
  if (!sameAddress(authorization.to, requirement.payTo)) {
    throw new PaymentError(
      "invalid_exact_evm_payload_recipient_mismatch",
      `authorization pays ${authorization.to}, not ${requirement.payTo}`,
    );
  }
  if (authorization.value !== requirement.amount) {
    throw new PaymentError(
      "invalid_exact_evm_payload_authorization_value",
      `authorization value ${authorization.value} differs from the price ${requirement.amount}`,
    );
  }
  if (authorization.validAfter >= nowSeconds) {
    throw new PaymentError(
      "invalid_exact_evm_payload_authorization_valid_after",
      "authorization is not valid yet",
    );
  }
  if (authorization.validBefore < nowSeconds + BigInt(validBeforeMarginSeconds)) {
    throw new PaymentError(
      "invalid_exact_evm_payload_authorization_valid_before",
      "authorization expired or expires too soon to settle",
    );
  }
}

/**
 * Recovers the EIP-712 signer and requires it to be `authorization.from`; returns it
 * EIP-55 checksummed (viem's form), whatever case `from` was written in. This is the costly
 * step (about 2 ms of hashing and ecrecover on the calling thread): callers run it last, after
 * `checkExactPayment`, and the service bounds how often one client may make it run.
 */
export async function recoverPayer(
  requirement: ExactRequirement,
  authorization: Authorization,
  parts: SignatureParts,
): Promise<Address> {
  // Loaded outside the try: a viem that cannot be loaded is not a bad signature.
  const { recoverAddress } = await loadViem();
  let signer: Address;
  try {
    signer = await recoverAddress({
      hash: await authorizationDigest(requirement, authorization),
      signature: parts,
    });
  } catch {
    throw new PaymentError("invalid_exact_evm_payload_signature", "no signer can be recovered");
  }
  if (!sameAddress(signer, authorization.from)) {
    throw new PaymentError("signer_mismatch", "the signature is not by authorization.from");
  }
  return signer;
}

export interface VerifyPaymentOptions {
  /** Milliseconds since the epoch (`Date.now` by default). */
  now?: () => number;
  validBeforeMarginSeconds?: number;
}

/** A payment that passed every rule but its signature's signer: what recovery needs. */
export interface CheckedPayment<R extends ExactRequirement = ExactRequirement> {
  readonly authorization: Authorization;
  readonly requirement: R;
  readonly payment: PaymentPayload;
  readonly signature: SignatureParts;
}

export interface VerifiedPayment<R extends ExactRequirement = ExactRequirement>
  extends Omit<CheckedPayment<R>, "signature"> {
  /** The signer, EIP-55 checksummed. */
  readonly payer: Address;
}

/**
 * Every rule that needs no cryptography, so a payment that breaks one costs no hashing:
 * the offer it answers (scheme, network, asset, `accepted`), payTo, amount, the validity
 * window, then the signature's form (length, `v`, low `s`, range). Synchronous and
 * allocation-light; throws a `PaymentError` for the first rule broken.
 */
export function checkExactPayment<R extends ExactRequirement>(
  payment: PaymentPayload,
  requirements: readonly R[],
  options: VerifyPaymentOptions = {},
): CheckedPayment<R> {
  const requirement = matchRequirement(payment, requirements);
  const { authorization, signature } = payment.payload;
  const nowSeconds = BigInt(Math.floor((options.now ?? Date.now)() / 1000));
  checkAuthorization(authorization, requirement, nowSeconds, options.validBeforeMarginSeconds);
  return { authorization, requirement, payment, signature: splitSignature(signature) };
}

/** The signer of a checked payment (`recoverPayer`), or a `PaymentError`. */
export async function recoverCheckedPayment<R extends ExactRequirement>(
  checked: CheckedPayment<R>,
): Promise<VerifiedPayment<R>> {
  const { authorization, requirement, payment, signature } = checked;
  const payer = await recoverPayer(requirement, authorization, signature);
  return { payer, authorization, requirement, payment };
}

/**
 * Verifies `payment` against the requirements offered for the resource, locally: the cheap
 * rules, then the signer. Throws a `PaymentError` for the first rule it breaks.
 */
export async function verifyExactPayment<R extends ExactRequirement>(
  payment: PaymentPayload,
  requirements: readonly R[],
  options: VerifyPaymentOptions = {},
): Promise<VerifiedPayment<R>> {
  return recoverCheckedPayment(checkExactPayment(payment, requirements, options));
}
