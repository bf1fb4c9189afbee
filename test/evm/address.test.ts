/**
 * The viem-free EVM helpers (src/evm/address.ts) against viem itself, which the service used
 * for the same work before: every answer must be the same, over deterministic pseudo-random
 * inputs and the edge cases of each rule.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { secp256k1 } from "@noble/curves/secp256k1";
import { getAddress, isAddress, keccak256 as viemKeccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readAddress } from "../../src/erc8004/registry.js";
import { ValidatorKeyError, validatorKeyFromText } from "../../src/erc8004/validator-key.js";
import {
  isStrictAddress,
  keccak256,
  publicKeyToAddress,
  toChecksumAddress,
} from "../../src/evm/address.js";
import { checksumAddress } from "../../src/payments/formats.js";

const CASES = 2000;

/** `length` deterministic pseudo-random bytes for case `i` (SHA-256 in counter mode). */
function bytesFor(label: string, i: number, length: number): Uint8Array {
  const out = Buffer.alloc(length);
  for (let block = 0; block * 32 < length; block++) {
    createHash("sha256")
      .update(`${label} ${i} ${block}`)
      .digest()
      .copy(out, block * 32);
  }
  return out;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** The same 40 digits with each letter's case taken from `bits` (a letter per bit). */
function recase(digits: string, bits: Uint8Array): string {
  return [...digits]
    .map((c, k) => (((bits[k >> 3] ?? 0) >> (k & 7)) & 1 ? c.toUpperCase() : c.toLowerCase()))
    .join("");
}

/** Every casing worth trying for one address: lower, upper, EIP-55, random, one letter off. */
function casings(lower: string, i: number): string[] {
  const checksummed = getAddress(`0x${lower}`).slice(2);
  const variants = [lower, lower.toUpperCase(), checksummed, recase(lower, bytesFor("case", i, 5))];
  const letter = [...checksummed].findIndex((c) => /[a-fA-F]/.test(c));
  if (letter !== -1) {
    const c = checksummed[letter]!;
    const flipped = c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase();
    variants.push(`${checksummed.slice(0, letter)}${flipped}${checksummed.slice(letter + 1)}`);
  }
  return variants.map((digits) => `0x${digits}`);
}

/** Addresses near the edges of the rules, each in all its casings. */
function edgeAddresses(): string[] {
  const digitsOnly = ["0".repeat(40), "1".repeat(40), "0123456789".repeat(4)];
  const letters = ["a".repeat(40), "f".repeat(40), `${"abcdef".repeat(6)}abcd`];
  // One letter among digits: about half of these have an all-uppercase checksum, the case
  // where viem's strict check accepts all-uppercase digits.
  const oneLetter = Array.from(
    { length: 40 },
    (_, k) => `${"7".repeat(k)}${"abcdef"[k % 6]}${"7".repeat(39 - k)}`,
  );
  const known = [
    "0x8004Cc8439f36fd5F9F049D9fF86523Df6dAAB58",
    "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826",
    "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB",
    "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
  ].map((address) => address.slice(2).toLowerCase());
  return [...digitsOnly, ...letters, ...oneLetter, ...known].flatMap((lower, i) =>
    casings(lower, 10_000 + i),
  );
}

/** Text that is not `0x` + 40 hex digits, or only nearly. */
const NOT_ADDRESSES = [
  "",
  "0x",
  "0x0",
  `0x${"a".repeat(39)}`,
  `0x${"a".repeat(41)}`,
  `0X${"a".repeat(40)}`,
  `0X${"A".repeat(40)}`,
  `${"a".repeat(40)}`,
  `00${"a".repeat(40)}`,
  `0x${"g".repeat(40)}`,
  `0x${"a".repeat(39)}g`,
  ` 0x${"a".repeat(40)}`,
  `0x${"a".repeat(40)} `,
  `0x${"a".repeat(40)}\n`,
  `\n0x${"a".repeat(40)}`,
  `0x${"a".repeat(20)} ${"a".repeat(19)}`,
  `0x${"a".repeat(39)}\u00e0`,
  `0x${"a".repeat(39)}\uff41`,
  `0x-${"a".repeat(39)}`,
];

function allAddresses(): string[] {
  const random = Array.from({ length: CASES }, (_, i) =>
    casings(hex(bytesFor("address", i, 20)), i),
  ).flat();
  return [...random, ...edgeAddresses()];
}

describe("EIP-55 and strict addresses without viem", () => {
  const addresses = allAddresses();

  test("toChecksumAddress is viem's getAddress, in every casing", () => {
    for (const address of addresses) {
      assert.equal(toChecksumAddress(address), getAddress(address), address);
    }
  });

  test("toChecksumAddress refuses what getAddress refuses", () => {
    for (const text of NOT_ADDRESSES) {
      assert.throws(() => getAddress(text), JSON.stringify(text));
      assert.throws(() => toChecksumAddress(text), TypeError, JSON.stringify(text));
    }
  });

  test("isStrictAddress is viem's isAddress(…, {strict: true})", () => {
    let accepted = 0;
    let upperAccepted = 0;
    for (const text of [...addresses, ...NOT_ADDRESSES]) {
      const expected = isAddress(text, { strict: true });
      assert.equal(isStrictAddress(text), expected, JSON.stringify(text));
      if (expected) accepted++;
      if (expected && /[A-F]/.test(text) && !/[a-f]/.test(text.slice(2))) upperAccepted++;
    }
    // The cases are not all one way: both answers, and all-uppercase accepted, occur.
    assert.ok(accepted > CASES && accepted < addresses.length, `${accepted} accepted`);
    assert.ok(upperAccepted > 0, "some all-uppercase checksum is among the cases");
  });

  test("formats.checksumAddress answers as its viem version did", () => {
    for (const text of [...addresses, ...NOT_ADDRESSES]) {
      const before =
        /^0x[0-9a-fA-F]{40}$/.test(text) && isAddress(text, { strict: true })
          ? getAddress(text)
          : null;
      assert.equal(checksumAddress(text), before, JSON.stringify(text));
    }
  });

  test("registry.readAddress answers as its viem version did", () => {
    for (const text of [...addresses, ...NOT_ADDRESSES]) {
      const match = /^0x([0-9a-fA-F]{40})$/.exec(text)?.[1];
      let before: ReturnType<typeof readAddress>;
      if (match === undefined) before = { ok: false, reason: "not_an_address" };
      else {
        const checksummed = getAddress(`0x${match.toLowerCase()}`);
        const mixed = match !== match.toLowerCase() && match !== match.toUpperCase();
        before =
          mixed && checksummed !== text
            ? { ok: false, reason: "bad_checksum" }
            : { ok: true, address: checksummed };
      }
      assert.deepEqual(readAddress(text), before, JSON.stringify(text));
    }
  });
});

describe("keccak256 without viem", () => {
  test("is viem's keccak256 over lengths around the 136-byte rate", () => {
    const lengths = [0, 1, 31, 32, 33, 64, 135, 136, 137, 271, 272, 273, 1000, 4096];
    for (const [i, length] of lengths.entries()) {
      const data = bytesFor("keccak", i, length);
      assert.deepEqual(keccak256(data), viemKeccak256(data, "bytes"), `${length} bytes`);
    }
  });

  test("is Ethereum's keccak-256, not SHA3-256", () => {
    assert.equal(
      hex(keccak256(new Uint8Array())),
      "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
    );
  });
});

describe("addresses of secp256k1 keys without viem", () => {
  const N = secp256k1.CURVE.n;
  const keyHex = (scalar: bigint) => `0x${scalar.toString(16).padStart(64, "0")}` as const;
  const randomKeys = Array.from({ length: 200 }, (_, i) => {
    const scalar = BigInt(`0x${hex(bytesFor("key", i, 32))}`);
    return keyHex((scalar % (N - 1n)) + 1n);
  });
  const edgeKeys = [keyHex(1n), keyHex(2n), keyHex(N - 1n), keyHex(N - 2n), keyHex(1n << 255n)];

  test("publicKeyToAddress and the validator key agree with privateKeyToAccount", () => {
    for (const key of [...randomKeys, ...edgeKeys]) {
      const expected = privateKeyToAccount(key).address;
      assert.equal(publicKeyToAddress(secp256k1.getPublicKey(key.slice(2), false)), expected, key);
      assert.equal(validatorKeyFromText(`${key}\n`, "key").address, expected, key);
      assert.equal(validatorKeyFromText(key, "key").address, expected, key);
    }
  });

  test("refuses the keys viem refuses, with the same message as before", () => {
    for (const scalar of [0n, N, N + 1n, (1n << 256n) - 1n]) {
      const key = keyHex(scalar);
      assert.throws(() => privateKeyToAccount(key), key);
      assert.throws(
        () => validatorKeyFromText(`${key}\n`, "/data/validator-key.hex"),
        new ValidatorKeyError("/data/validator-key.hex is not a valid secp256k1 private key"),
      );
    }
  });

  test("publicKeyToAddress takes only an uncompressed key", () => {
    const key = randomKeys[0]!.slice(2);
    assert.throws(() => publicKeyToAddress(secp256k1.getPublicKey(key, true)), TypeError);
    const uncompressed = secp256k1.getPublicKey(key, false);
    assert.throws(() => publicKeyToAddress(uncompressed.subarray(1)), TypeError);
  });
});
