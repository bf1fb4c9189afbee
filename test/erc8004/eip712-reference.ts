/**
 * A second, independent EIP-712 implementation for the tests (protocols.md §2.6), written from
 * the EIP on @noble primitives: it shares no code with viem, which the service signs with, so
 * a digest or a signature both agree on is right by construction, not by shared bugs. It
 * covers the member types the tests need (atomic types and nested structs; no arrays).
 */
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";

export type TypedFields = readonly { name: string; type: string }[];
export type TypedTypes = Record<string, TypedFields>;
export type TypedValue = string | number | bigint | boolean | { [member: string]: TypedValue };

const utf8 = (text: string) => new TextEncoder().encode(text);

function hexBytes(hex: string): Uint8Array {
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new Error(`not hex: ${hex}`);
  return Uint8Array.from(Buffer.from(hex.slice(2), "hex"));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(Buffer.concat(parts));
}

function word(value: bigint): Uint8Array {
  if (value < 0n || value >= 1n << 256n) throw new Error(`out of uint256 range: ${value}`);
  return hexBytes(`0x${value.toString(16).padStart(64, "0")}`);
}

export function keccakHex(data: Uint8Array): string {
  return `0x${Buffer.from(keccak_256(data)).toString("hex")}`;
}

/** `encodeType`: the primary type, then every struct it references, sorted by name. */
export function encodeType(primary: string, types: TypedTypes): string {
  const found = new Set<string>();
  const visit = (name: string) => {
    if (found.has(name) || types[name] === undefined) return;
    found.add(name);
    for (const field of types[name]) visit(field.type);
  };
  visit(primary);
  found.delete(primary);
  return [primary, ...[...found].sort()]
    .map((name) => `${name}(${types[name]!.map((f) => `${f.type} ${f.name}`).join(",")})`)
    .join("");
}

function encodeValue(type: string, value: TypedValue, types: TypedTypes): Uint8Array {
  if (types[type] !== undefined) {
    return hashStruct(type, value as { [member: string]: TypedValue }, types);
  }
  if (type === "string") return keccak_256(utf8(value as string));
  if (type === "bytes") return keccak_256(hexBytes(value as string));
  if (type === "bool") return word(value ? 1n : 0n);
  if (type === "address") return word(BigInt(value as string));
  if (type === "bytes32") {
    const bytes = hexBytes(value as string);
    if (bytes.length !== 32) throw new Error("bytes32 must be 32 bytes");
    return bytes;
  }
  const uint = /^uint(\d+)$/.exec(type);
  if (uint !== null) {
    const n = BigInt(value as number | bigint | string);
    if (n >= 1n << BigInt(uint[1]!)) throw new Error(`${n} does not fit ${type}`);
    return word(n);
  }
  throw new Error(`type ${type} is not covered by this reference`);
}

export function hashStruct(
  primary: string,
  value: { [member: string]: TypedValue },
  types: TypedTypes,
): Uint8Array {
  const typeHash = keccak_256(utf8(encodeType(primary, types)));
  const members = types[primary]!.map((field) => {
    const member = value[field.name];
    if (member === undefined) throw new Error(`${primary}.${field.name} is missing`);
    return encodeValue(field.type, member, types);
  });
  return keccak_256(concat(typeHash, ...members));
}

const DOMAIN_FIELDS = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
  { name: "salt", type: "bytes32" },
] as const;

/** The domain separator over the members the domain actually has, in the EIP's order. */
export function domainSeparator(domain: { [member: string]: TypedValue }): Uint8Array {
  const fields = DOMAIN_FIELDS.filter((field) => domain[field.name] !== undefined);
  return hashStruct("EIP712Domain", domain, { EIP712Domain: fields });
}

export interface TypedData {
  domain: { [member: string]: TypedValue };
  types: TypedTypes;
  primaryType: string;
  message: { [member: string]: TypedValue };
}

/** keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message)), as 0x-hex. */
export function typedDataDigest(data: TypedData): string {
  return keccakHex(
    concat(
      Uint8Array.of(0x19, 0x01),
      domainSeparator(data.domain),
      hashStruct(data.primaryType, data.message, data.types),
    ),
  );
}

/** EIP-55: a hex digit is upper case where the keccak of the lowercase address has a nibble ≥ 8. */
export function toChecksumAddress(address: string): string {
  const lower = address.slice(2).toLowerCase();
  const digest = Buffer.from(keccak_256(utf8(lower))).toString("hex");
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    out += Number.parseInt(digest[i]!, 16) >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
  }
  return out;
}

/** The EIP-55 address that produced a 65-byte `r ‖ s ‖ v` signature over `digest`. */
export function recoverSigner(digest: string, signature: string): string {
  const bytes = hexBytes(signature);
  if (bytes.length !== 65) throw new Error("a signature is 65 bytes");
  const v = bytes[64]!;
  if (v !== 27 && v !== 28) throw new Error(`v must be 27 or 28, not ${v}`);
  const publicKey = secp256k1.Signature.fromCompact(bytes.subarray(0, 64))
    .addRecoveryBit(v - 27)
    .recoverPublicKey(hexBytes(digest))
    .toRawBytes(false);
  return toChecksumAddress(
    `0x${Buffer.from(keccak_256(publicKey.subarray(1)))
      .toString("hex")
      .slice(24)}`,
  );
}
