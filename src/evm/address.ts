/**
 * EVM addresses and keccak-256 without viem, on @noble/hashes. This is all the web process
 * needs at startup (an operator's `payTo` checked, the validator key's address published at
 * `/info`), and all `POST /erc8004/validate` needs before it signs (the registry address, the
 * keccak-256 of a task id). Loading viem for it cost the web process about 12 MiB of RSS and
 * 1,700 modules (docs/operations.md, "Memory of the web process"). viem is still what signs
 * and recovers EIP-712 signatures, loaded on first use (`viem.ts`).
 *
 * The functions mirror viem's `keccak256(…, "bytes")`, `getAddress`, `isAddress(…, {strict:
 * true})` and `publicKeyToAddress` exactly; test/evm/address.test.ts compares them with viem.
 */
import { keccak_256 } from "@noble/hashes/sha3";

export type Address = `0x${string}`;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** keccak-256 (Ethereum's, not NIST SHA3-256) of `bytes`. */
export function keccak256(bytes: Uint8Array): Uint8Array {
  return keccak_256(bytes);
}

/**
 * The EIP-55 spelling of an address given in any case (viem's `getAddress`): a hex letter is
 * upper case where the keccak-256 of the lowercase hex text has a nibble of 8 or more there.
 * Throws on text that is not `0x` + 40 hex digits.
 */
export function toChecksumAddress(address: string): Address {
  if (!ADDRESS.test(address)) throw new TypeError(`not an address: ${address}`);
  const lower = address.slice(2).toLowerCase();
  const hash = keccak_256(new TextEncoder().encode(lower));
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f;
    out += nibble >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
  }
  return out as Address;
}

/**
 * viem's `isAddress(value, { strict: true })`: `0x` + 40 hex digits, and either all lowercase
 * (no checksum) or exactly the EIP-55 spelling. All-uppercase digits are NOT exempt (viem
 * compares them with the checksum like any mixed case), so they pass only when the checksum
 * happens to be all upper case.
 */
export function isStrictAddress(value: string): value is Address {
  if (!ADDRESS.test(value)) return false;
  return value === value.toLowerCase() || value === toChecksumAddress(value);
}

/**
 * The EIP-55 address of an uncompressed secp256k1 public key (65 bytes, `04 ‖ x ‖ y`): the
 * last 20 bytes of the keccak-256 of `x ‖ y`.
 */
export function publicKeyToAddress(publicKey: Uint8Array): Address {
  if (publicKey.length !== 65 || publicKey[0] !== 0x04) {
    throw new TypeError("expected an uncompressed secp256k1 public key (65 bytes, 0x04 first)");
  }
  const hash = keccak_256(publicKey.subarray(1));
  return toChecksumAddress(`0x${Buffer.from(hash.subarray(12)).toString("hex")}`);
}
