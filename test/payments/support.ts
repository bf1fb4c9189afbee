/** Payments test helpers: generated wallets that sign real EIP-3009 authorizations. */
import { createHash } from "node:crypto";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import {
  exactAuthorization,
  exactPayload,
  type SignedAuthorization,
  signExactAuthorization,
} from "../../src/client/x402.js";
import { type Authorization, encodeBase64Json } from "../../src/payments/codec.js";
import type { Hex } from "../../src/payments/formats.js";
import { nonceLedgerKey } from "../../src/payments/nonce-ledger.js";
import {
  type ExactRequirement,
  type PaymentRequirementSet,
  type PaymentSettings,
  paymentRequirements,
  paymentSettings,
  requirementFromWire,
} from "../../src/payments/requirements.js";
import { fromPlain, isObject, type JsonObject, jsonObject } from "../../src/verifier/json/value.js";

/** 2026-01-01T00:00:00Z: every test runs against this clock. */
export const NOW_MS = 1_767_225_600_000;
export const NOW_S = BigInt(NOW_MS / 1000);
export const clock = () => NOW_MS;

export const PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
export const RESOURCE = {
  url: "https://receiptd.example/verify",
  description: "Verify a Continuity Receipt bundle",
};

export function testSettings(): PaymentSettings {
  return paymentSettings({ payTo: PAY_TO });
}

export function callRequirements(settings = testSettings()): PaymentRequirementSet {
  return paymentRequirements(settings, { resource: RESOURCE, offers: ["call"] });
}

export function passRequirements(settings = testSettings()): PaymentRequirementSet {
  return paymentRequirements(settings, {
    resource: { url: "https://receiptd.example/crystals", description: "Store a crystal" },
    offers: ["lease", "day"],
  });
}

export function wallet(): PrivateKeyAccount {
  return privateKeyToAccount(generatePrivateKey());
}

export type { SignedAuthorization };

/**
 * Signs an authorization the way an x402 SDK client does, with the client's own builder
 * (`receiptd/client`'s x402 hook) at the tests' clock, and `overrides` applied to what is
 * signed.
 */
export async function signAuthorization(
  account: PrivateKeyAccount,
  requirement: ExactRequirement,
  overrides: Partial<Authorization> = {},
): Promise<SignedAuthorization> {
  const authorization = {
    ...exactAuthorization(account.address, requirement, NOW_S),
    ...overrides,
  };
  return signExactAuthorization(account, requirement, authorization);
}

export function v1Payment(network: string, signed: SignedAuthorization): JsonObject {
  return jsonObject({ x402Version: 1, scheme: "exact", network, payload: exactPayload(signed) });
}

export function v2Payment(accepted: JsonObject, signed: SignedAuthorization): JsonObject {
  return jsonObject({
    x402Version: 2,
    resource: jsonObject({ url: RESOURCE.url }),
    accepted,
    payload: exactPayload(signed),
  });
}

export const toHeader = encodeBase64Json;

/** Decodes a base64 JSON header with plain JSON.parse (an independent reading). */
export function fromHeader(value: string): unknown {
  return JSON.parse(Buffer.from(value, "base64").toString("utf8"));
}

/** The same signature with another v byte. */
export function withV(signature: Hex, v: number): Hex {
  return `${signature.slice(0, 130)}${v.toString(16).padStart(2, "0")}` as Hex;
}

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** The malleable twin (r, n - s, flipped v): valid ECDSA for the same key, but high-s. */
export function highS(signature: Hex): Hex {
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  const v = Number.parseInt(signature.slice(130, 132), 16);
  const flipped = (N - s).toString(16).padStart(64, "0");
  return `${signature.slice(0, 66)}${flipped}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
}

/**
 * A signed payment for the paid call at `base` + `path` (`POST`, `body`): asks for the 402,
 * signs the first requirement it offers with `payer`, and names the transaction the stand-in
 * facilitator will report (facilitator-peer.ts names it after the authorization). `null` when
 * the call was not answered 402 (the caller's test decides what that means).
 */
export async function paymentFor(
  base: string,
  payer: PrivateKeyAccount,
  body: Uint8Array,
  path = "/verify",
): Promise<{ header: string; tx: string } | null> {
  const challenge = await fetch(`${base}${path}`, { method: "POST", body });
  await challenge.arrayBuffer();
  if (challenge.status !== 402) return null;
  const required = JSON.parse(
    Buffer.from(String(challenge.headers.get("payment-required")), "base64").toString("utf8"),
  ) as { accepts: unknown[] };
  const wire = fromPlain(required.accepts[0]);
  if (!isObject(wire)) throw new Error("the 402 offered no requirement object");
  const requirement = requirementFromWire(wire, 2);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const signed = await signAuthorization(payer, requirement, {
    validAfter: now - 600n,
    validBefore: now + BigInt(requirement.maxTimeoutSeconds),
  });
  const key = nonceLedgerKey({
    network: requirement.network.caip2,
    asset: requirement.asset,
    payer: payer.address,
    nonce: signed.authorization.nonce,
  });
  const tx = `0x${createHash("sha256").update(`${requirement.network.caip2}|${key}`).digest("hex")}`;
  return { header: toHeader(v2Payment(wire, signed)), tx };
}

/**
 * The members a payment gateway posts to `POST /payment-receipts` for a settled `POST /verify`
 * call on Base (USDC, the test `PAY_TO`), for transaction `tx`.
 */
export function settlementFields(tx: string): Record<string, string> {
  return {
    tx,
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "10000",
    payTo: PAY_TO,
    path: "/verify",
  };
}

/**
 * What the stand-in facilitator at `peerUrl` says of the payment in `header` (its own
 * `POST /authorization-state`): whether it settled it, and under which transaction.
 */
export async function authorizationState(
  peerUrl: string,
  header: string,
): Promise<{ settled: boolean; transaction?: string }> {
  const decoded = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as {
    accepted: unknown;
  };
  const answer = await fetch(`${peerUrl}/authorization-state`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      x402Version: 2,
      paymentPayload: decoded,
      paymentRequirements: decoded.accepted,
    }),
  });
  return (await answer.json()) as { settled: boolean; transaction?: string };
}
