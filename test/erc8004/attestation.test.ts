/**
 * The EIP-712 `ValidationResponse` attestation: signed with viem, checked with viem's own
 * verification and with an independent implementation (eip712-reference.ts), which is itself
 * pinned to the EIP's "Mail" vector first.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { hashTypedData, recoverTypedDataAddress, verifyTypedData } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  ATTESTATION_DOMAIN_NAME,
  ATTESTATION_DOMAIN_VERSION,
  type Attestation,
  signAttestation,
} from "../../src/erc8004/attestation.js";
import { DEFAULT_VALIDATION_REGISTRY } from "../../src/erc8004/registry.js";
import { validatorKeyFromText } from "../../src/erc8004/validator-key.js";
import {
  domainSeparator,
  encodeType,
  hashStruct,
  recoverSigner,
  type TypedData,
  typedDataDigest,
} from "./eip712-reference.js";

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;

describe("the independent EIP-712 reference", () => {
  const mail: TypedData = {
    domain: {
      name: "Ether Mail",
      version: "1",
      chainId: 1,
      verifyingContract: "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
    },
    types: {
      Person: [
        { name: "name", type: "string" },
        { name: "wallet", type: "address" },
      ],
      Mail: [
        { name: "from", type: "Person" },
        { name: "to", type: "Person" },
        { name: "contents", type: "string" },
      ],
    },
    primaryType: "Mail",
    message: {
      from: { name: "Cow", wallet: "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826" },
      to: { name: "Bob", wallet: "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB" },
      contents: "Hello, Bob!",
    },
  };

  test("reproduces the EIP's Mail vector (protocols.md §2.6)", () => {
    assert.equal(
      encodeType("Mail", mail.types),
      "Mail(Person from,Person to,string contents)Person(string name,address wallet)",
    );
    assert.equal(
      hex(domainSeparator(mail.domain)),
      "0xf2cee375fa42b42143804025fc449deafd50cc031ca257e0b194a650a912090f",
    );
    assert.equal(
      hex(hashStruct("Mail", mail.message, mail.types)),
      "0xc52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e",
    );
    assert.equal(
      typedDataDigest(mail),
      "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2",
    );
  });

  test("recovers the Mail vector's signer from its signature", () => {
    const key = keccak_256(new TextEncoder().encode("cow"));
    const digest = typedDataDigest(mail);
    const signed = secp256k1.sign(Buffer.from(digest.slice(2), "hex"), key);
    const signature = `0x${signed.toCompactHex()}${(27 + signed.recovery).toString(16)}`;
    assert.ok(signature.startsWith("0x4355c47d"));
    assert.ok(signature.endsWith("b915621c"));
    assert.equal(recoverSigner(digest, signature), "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826");
  });
});

describe("signAttestation", () => {
  // A fixed key, so a failure reproduces; its address is whatever it derives to.
  const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
  const validator = validatorKeyFromText(`${key}\n`, "the test key");
  const message = {
    requestId: `0x${"ab".repeat(32)}`,
    outcome: 1,
    receiptHash: `0x${"cd".repeat(32)}`,
    timestamp: 1_790_000_000,
  } as const;
  const sign = () =>
    signAttestation(validator, {
      chainId: 8453,
      verifyingContract: DEFAULT_VALIDATION_REGISTRY,
      message,
    });

  /** The envelope as a client receives it: JSON text, parsed back, its types not literal. */
  type Served = Omit<Attestation, "types"> & {
    types: Record<string, { name: string; type: string }[]>;
  };
  const asServed = (attestation: Attestation) => JSON.parse(JSON.stringify(attestation)) as Served;

  test("is the self-describing envelope of service.md §5", async () => {
    const attestation = asServed(await sign());
    assert.deepEqual(attestation.domain, {
      name: ATTESTATION_DOMAIN_NAME,
      version: ATTESTATION_DOMAIN_VERSION,
      chainId: 8453,
      verifyingContract: DEFAULT_VALIDATION_REGISTRY,
    });
    assert.deepEqual(attestation.types, {
      ValidationResponse: [
        { name: "requestId", type: "bytes32" },
        { name: "outcome", type: "uint8" },
        { name: "receiptHash", type: "bytes32" },
        { name: "timestamp", type: "uint256" },
      ],
    });
    assert.equal(attestation.primaryType, "ValidationResponse");
    assert.deepEqual(attestation.message, message);
    assert.equal(attestation.signer, validator.address);
    assert.equal(attestation.signer, privateKeyToAccount(key).address);
    assert.match(attestation.signature, /^0x[0-9a-f]{128}(1b|1c)$/);
  });

  test("its digest is the EIP-712 hash, computed independently", async () => {
    const attestation = asServed(await sign());
    assert.equal(attestation.digest, typedDataDigest(attestation as unknown as TypedData));
    assert.equal(
      attestation.digest,
      hashTypedData({ ...attestation, message: { ...attestation.message } }),
    );
  });

  test("the signer is recovered from it by viem and by the independent implementation", async () => {
    const attestation = asServed(await sign());
    const { domain, types, primaryType, signature } = attestation;
    const typed = { domain, types, primaryType, message: attestation.message, signature };
    assert.equal(await recoverTypedDataAddress(typed), attestation.signer);
    assert.equal(await verifyTypedData({ ...typed, address: attestation.signer }), true);
    assert.equal(recoverSigner(attestation.digest, signature), attestation.signer);
  });

  test("a tampered message, domain or signature no longer verifies", async () => {
    const attestation = asServed(await sign());
    const { domain, types, primaryType, signature, signer } = attestation;
    const verifies = (changes: {
      message?: Partial<Served["message"]>;
      domain?: Partial<Served["domain"]>;
      signature?: `0x${string}`;
    }) =>
      verifyTypedData({
        domain: { ...domain, ...changes.domain },
        types,
        primaryType,
        message: { ...attestation.message, ...changes.message },
        signature: changes.signature ?? signature,
        address: signer,
      });
    assert.equal(await verifies({ message: { outcome: 0 } }), false);
    assert.equal(await verifies({ message: { timestamp: message.timestamp + 1 } }), false);
    assert.equal(await verifies({ message: { requestId: `0x${"ac".repeat(32)}` } }), false);
    assert.equal(await verifies({ message: { receiptHash: `0x${"00".repeat(32)}` } }), false);
    assert.equal(await verifies({ domain: { chainId: 84532 } }), false);
    assert.equal(
      await verifies({
        domain: { verifyingContract: "0x8004Cb1BF31DAf7788923b405b754f57acEB4272" },
      }),
      false,
    );
    // A changed s (r must stay a curve point's x for recovery to run at all).
    const at = 2 + 64 + 10;
    const flipped = `${signature.slice(0, at)}${signature[at] === "0" ? "1" : "0"}${signature.slice(at + 1)}`;
    assert.equal(await verifies({ signature: flipped as `0x${string}` }), false);

    const tampered = { ...attestation, message: { ...attestation.message, outcome: 2 } };
    assert.notEqual(typedDataDigest(tampered as unknown as TypedData), attestation.digest);
    assert.notEqual(
      recoverSigner(typedDataDigest(tampered as unknown as TypedData), signature),
      signer,
    );
  });
});
