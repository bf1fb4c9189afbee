/**
 * The EIP-712 `ValidationResponse` attestation (service.md §5). ERC-8004 itself has no signed
 * off-chain response (protocols.md §2.5: the registry only takes a transaction from the
 * validator), so this is our own typed struct under a domain naming our service, bound to the
 * chain and the Validation Registry the request is about. Any EIP-712 implementation recovers
 * the validator's address from the envelope as it is served: `types` deliberately leaves out
 * `EIP712Domain`, which libraries derive from the domain's members (ethers refuses it inside
 * `types`).
 */
import type { Address, Hex } from "viem";
import { loadViem } from "../evm/viem.js";
import type { ValidatorKey } from "./validator-key.js";

/** The domain's `name`: the service name every payload carries. */
export const ATTESTATION_DOMAIN_NAME = "continuity-receipt-verify";
/** Bumped if the struct below ever changes, so old and new attestations cannot be confused. */
export const ATTESTATION_DOMAIN_VERSION = "1";
export const ATTESTATION_PRIMARY_TYPE = "ValidationResponse";

export const ATTESTATION_TYPES = {
  ValidationResponse: [
    { name: "requestId", type: "bytes32" },
    { name: "outcome", type: "uint8" },
    { name: "receiptHash", type: "bytes32" },
    { name: "timestamp", type: "uint256" },
  ],
} as const;

/** `outcome` of the message (service.md §5): not the registry's 0–100 `response` score. */
export const OUTCOMES = { REJECT: 0, ACCEPT: 1, NEEDS_EVIDENCE: 2 } as const;
export type OutcomeLabel = keyof typeof OUTCOMES;
export type Outcome = (typeof OUTCOMES)[OutcomeLabel];

export interface AttestationDomain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: Address;
}

/** A type alias, not an interface, so it is a plain record to typed-data APIs. */
export type AttestationMessage = {
  /** The ERC-8004 request hash the attestation answers (bytes32, lowercase hex). */
  requestId: Hex;
  outcome: Outcome;
  /** `0x` + SHA-256 of the JCS bytes of the bundle that was validated. */
  receiptHash: Hex;
  /** Unix seconds at signing. */
  timestamp: number;
};

export interface Attestation {
  domain: AttestationDomain;
  types: typeof ATTESTATION_TYPES;
  primaryType: typeof ATTESTATION_PRIMARY_TYPE;
  message: AttestationMessage;
  /** The EIP-712 hash: keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message)). */
  digest: Hex;
  /** 65 bytes, r ‖ s ‖ v (v = 27 or 28), over `digest`. */
  signature: Hex;
  /** The validator's EIP-55 address. */
  signer: Address;
}

export interface AttestationRequest {
  chainId: number;
  verifyingContract: Address;
  message: AttestationMessage;
}

export function attestationDomain(chainId: number, verifyingContract: Address): AttestationDomain {
  return {
    name: ATTESTATION_DOMAIN_NAME,
    version: ATTESTATION_DOMAIN_VERSION,
    chainId,
    verifyingContract,
  };
}

/**
 * Signs the message with the validator key and returns the self-describing envelope. viem is
 * loaded here, on the first attestation, not when the module is (`evm/viem.ts`).
 */
export async function signAttestation(
  validator: ValidatorKey,
  request: AttestationRequest,
): Promise<Attestation> {
  const typedData = {
    domain: attestationDomain(request.chainId, request.verifyingContract),
    types: ATTESTATION_TYPES,
    primaryType: ATTESTATION_PRIMARY_TYPE,
    message: request.message,
  } as const;
  const message = { ...request.message, timestamp: BigInt(request.message.timestamp) };
  const [{ hashTypedData }, account] = await Promise.all([loadViem(), validator.signer()]);
  const digest = hashTypedData({ ...typedData, message });
  const signature = await account.signTypedData({ ...typedData, message });
  return { ...typedData, digest, signature, signer: validator.address };
}
