/** Lexical forms of the EVM values x402 carries as JSON strings. */
import { isStrictAddress, toChecksumAddress } from "../evm/address.js";

export type Address = `0x${string}`;
export type Hex = `0x${string}`;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})+$/;
const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** Decimal without sign or leading zeros; 78 digits is the most a uint256 can need. */
const UINT_DECIMAL = /^(?:0|[1-9][0-9]{0,77})$/;
const UINT256_MAX = (1n << 256n) - 1n;

/** Any-case 20-byte hex address (payloads are compared case-insensitively). */
export function isAddressText(value: string): value is Address {
  return ADDRESS.test(value);
}

/**
 * An address as configured by an operator: mixed case must be a valid EIP-55 checksum (viem's
 * strict `isAddress`, which lets all-lowercase through). The result is the EIP-55 spelling.
 */
export function checksumAddress(value: string): Address | null {
  return isStrictAddress(value) ? toChecksumAddress(value) : null;
}

export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

export function isBytes32(value: string): value is Hex {
  return BYTES32.test(value);
}

export function isHexBytes(value: string): value is Hex {
  return HEX_BYTES.test(value);
}

export function isTransactionHash(value: string): value is Hex {
  return TX_HASH.test(value);
}

/** A uint256 written as a canonical decimal string, or null. */
export function parseUint256(value: string): bigint | null {
  if (!UINT_DECIMAL.test(value)) return null;
  const parsed = BigInt(value);
  return parsed <= UINT256_MAX ? parsed : null;
}
