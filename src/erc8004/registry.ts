/**
 * Where an attestation points: the chain and the ERC-8004 Validation Registry that the
 * EIP-712 domain names (`chainId`, `verifyingContract`).
 */
import { type Address, toChecksumAddress } from "../evm/address.js";

/** Base mainnet (`eip155:8453`), the network the service's interface names. */
export const DEFAULT_CHAIN_ID = 8453;

/**
 * The Validation Registry's address on mainnets, Base included (protocols.md §2.4; the
 * testnets' is `0x8004Cb1BF31DAf7788923b405b754f57acEB4272`). Written EIP-55 checksummed:
 * strict EIP-712 tooling refuses an address whose mixed case is not a valid checksum.
 */
export const DEFAULT_VALIDATION_REGISTRY: Address = "0x8004Cc8439f36fd5F9F049D9fF86523Df6dAAB58";

/**
 * The largest chain id wallets accept (MetaMask's `MAX_SAFE_CHAIN_ID`), which keeps the EIP-155
 * signature `v` (chain_id × 2 + 35 or 36) a safe JavaScript integer. Zero is no chain.
 */
export const MAX_CHAIN_ID = 4_503_599_627_370_476;

const ADDRESS = /^0x([0-9a-fA-F]{40})$/;

export type AddressReading =
  | { ok: true; address: Address }
  | { ok: false; reason: "not_an_address" | "bad_checksum" };

/**
 * Reads `0x` + 40 hex digits. All-lowercase or all-uppercase digits carry no checksum
 * (EIP-55) and are accepted; mixed case must be the exact EIP-55 spelling, since a wrong one
 * is how a mistyped address shows. The result is always the checksummed spelling.
 */
export function readAddress(text: string): AddressReading {
  const hex = ADDRESS.exec(text)?.[1];
  if (hex === undefined) return { ok: false, reason: "not_an_address" };
  const checksummed = toChecksumAddress(text);
  const mixedCase = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  if (mixedCase && checksummed !== text) return { ok: false, reason: "bad_checksum" };
  return { ok: true, address: checksummed };
}
