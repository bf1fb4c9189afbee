/**
 * Settlement receipts (service.md §4): the service's signed, content-free statement that a
 * payment settled. A receipt names the settlement (network, asset, amount, payee, transaction),
 * the route that was paid for and a coarse description of the paying client, never anything
 * the client sent as content.
 *
 * The settlement's description is the same object wherever it comes from: the body of
 * `POST /payment-receipts`, a job an external producer (a payment gateway) puts on the
 * settlements queue, or our own x402 path. One schema checks all three, so a receipt can only
 * ever carry values within the bounds below.
 */
import { createHash } from "node:crypto";
import { bodyValidator } from "../validation/body-validator.js";
import { sha256Digest } from "../verifier/crypto/digest.js";
import { type Ed25519Signer, signEd25519 } from "../verifier/crypto/ed25519.js";
import { canonicalBytes } from "../verifier/json/canonical.js";
import { fromPlain, type JsonValue } from "../verifier/json/value.js";

export const SETTLEMENT_RECEIPT_KIND = "svc.payment-receipt";
export const SETTLEMENT_RECEIPT_VERSION = 1;

/** An EVM transaction hash, hex of either case (stored and signed in lower case). */
export const TRANSACTION_HASH_PATTERN = "^0x[0-9a-fA-F]{64}$";
const TRANSACTION_HASH = new RegExp(TRANSACTION_HASH_PATTERN);

export const INVALID_TRANSACTION_HASH_DETAIL = "tx must be 0x and 64 hex digits";

/** The one spelling of a transaction hash: lower case; null when `tx` is not one. */
export function transactionId(tx: string): string | null {
  return TRANSACTION_HASH.test(tx) ? tx.toLowerCase() : null;
}

/** Raw User-Agent strings longer than this are refused (Node's whole header block is 16 KiB). */
export const USER_AGENT_MAX_CHARACTERS = 16_384;

/**
 * Every member a receipt copies is bounded and drawn from a small ASCII alphabet, so a receipt
 * has a bounded size, canonicalises without surprises and cannot smuggle content.
 */
export const settlementSchema = {
  type: "object",
  description:
    "a settled payment: `tx`, `network`, `asset`, `amount`, `payTo` and the paid `path`; " +
    "optionally the paying client's User-Agent (`ua`, classified and hashed, never stored) and, " +
    "for an MCP call, the JSON-RPC method (`rpc`) and the tool (`tool`)",
  required: ["tx", "network", "asset", "amount", "payTo", "path"],
  additionalProperties: false,
  properties: {
    tx: {
      type: "string",
      pattern: TRANSACTION_HASH_PATTERN,
      description: "the settlement transaction: `0x` and 64 hex digits (stored in lower case)",
    },
    network: {
      type: "string",
      pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$",
      description: "CAIP-2 (`eip155:8453`) or x402 v1 name (`base`); at most 64 characters",
    },
    asset: {
      type: "string",
      pattern: "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$",
      description: "the token (an address or CAIP-19 id); at most 128 characters",
    },
    amount: {
      type: "string",
      pattern: "^[1-9][0-9]{0,77}$",
      description: "atomic units settled, a positive decimal string of at most 78 digits",
    },
    payTo: {
      type: "string",
      pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
      description: "the payee address; at most 128 characters",
    },
    path: {
      type: "string",
      pattern: "^/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,255}$",
      description: "the paid route's path, without query string; at most 256 characters",
    },
    ua: {
      type: ["string", "null"],
      maxLength: USER_AGENT_MAX_CHARACTERS,
      description:
        'the paying client\'s User-Agent (`""`: it sent none); absent or null: not known',
    },
    rpc: {
      type: ["string", "null"],
      pattern: "^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$",
      description: "the JSON-RPC method paid for over MCP (`tools/call`); at most 64 characters",
    },
    tool: {
      type: ["string", "null"],
      pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
      description: "the MCP tool paid for (`verify_bundle`); at most 64 characters",
    },
  },
} as const;

/**
 * A settled payment: what `POST /payment-receipts` takes, what the settlements queue carries
 * (JSON, so external producers can too) and what our x402 path reports. One type for the
 * three, so a member one of them fills reaches the receipt.
 */
export type Settlement = {
  /** `0x` + 64 lower-case hex. */
  tx: string;
  network: string;
  asset: string;
  /** Atomic units, a decimal string. */
  amount: string;
  payTo: string;
  /** The paid route's path, without query string. */
  path: string;
  /** The paying client's User-Agent; `""`: it sent none; absent or null: not known. */
  ua?: string | null;
} & SettlementCall;

/** For a payment made over MCP: the JSON-RPC method and the tool it paid for. */
export type SettlementCall = {
  rpc?: string | null;
  tool?: string | null;
};

const validateSettlement = bodyValidator(settlementSchema);

/**
 * The settlement a strictly parsed body describes, with `tx` in lower case, or the first
 * problem with it (`checkSettlementPayload` does the same for a queue payload).
 */
export function checkSettlement(value: JsonValue): Settlement | string {
  const problem = validateSettlement(value);
  if (problem !== null) return problem;
  // The schema has fixed every member's type.
  const members = value as Map<string, string | null>;
  const settlement: Settlement = {
    tx: (members.get("tx") as string).toLowerCase(),
    network: members.get("network") as string,
    asset: members.get("asset") as string,
    amount: members.get("amount") as string,
    payTo: members.get("payTo") as string,
    path: members.get("path") as string,
  };
  for (const name of ["ua", "rpc", "tool"] as const) {
    const member = members.get(name);
    if (typeof member === "string") settlement[name] = member;
  }
  return settlement;
}

/** `checkSettlement` for a queue payload, which arrives as plain JSON. */
export function checkSettlementPayload(payload: unknown): Settlement | string {
  let value: JsonValue;
  try {
    value = fromPlain(payload);
  } catch {
    return "payload is not JSON data";
  }
  return checkSettlement(value);
}

/**
 * User-Agent families, first match wins, each a rule for the product token the trimmed,
 * lower-cased string starts with. Coarse on purpose: enough to tell agents from browsers, too
 * coarse to tell clients apart.
 */
export const USER_AGENT_FAMILIES = [
  "none",
  "curl",
  "wget",
  "node",
  "python",
  "go",
  "browser",
  "other",
] as const;
export type UserAgentFamily = (typeof USER_AGENT_FAMILIES)[number];

const FAMILY_RULES: readonly (readonly [UserAgentFamily, RegExp])[] = [
  ["curl", /^curl(?:\/|$)/],
  ["wget", /^wget(?:\/|$)/],
  // Node's own fetch says just `node`; the common HTTP libraries name themselves.
  ["node", /^(?:node|node-fetch|undici|axios|got)(?:\/|$)/],
  ["python", /^(?:python|python-[a-z0-9]+|aiohttp)(?:\/|$)/],
  ["go", /^go-http-client(?:\/|$)/],
  ["browser", /^mozilla\/\d/],
];

/** Crawlers announce themselves as `Mozilla/5.0 (compatible; …bot…)`; they are not browsers. */
const CRAWLER = /bot|crawl|spider|slurp/;

export function userAgentFamily(userAgent: string): UserAgentFamily {
  const ua = userAgent.trim().toLowerCase();
  if (ua === "") return "none";
  for (const [family, rule] of FAMILY_RULES) {
    if (!rule.test(ua)) continue;
    if (family === "browser" && CRAWLER.test(ua)) return "other";
    return family;
  }
  return "other";
}

/** The first 12 hex digits of the SHA-256 of the raw User-Agent (its UTF-8 bytes). */
export function userAgentHash(userAgent: string): string {
  return createHash("sha256").update(userAgent, "utf8").digest("hex").slice(0, 12);
}

export type SettlementSignature = { alg: "ed25519"; key: string; value: string };

/** The receipt, members in the order they are stored (signatures cover JCS, not this order). */
export type SettlementReceipt = {
  kind: typeof SETTLEMENT_RECEIPT_KIND;
  version: typeof SETTLEMENT_RECEIPT_VERSION;
  issued_at: string;
  network: string;
  asset: string;
  amount: string;
  pay_to: string;
  tx: string;
  path: string;
  rpc?: string;
  tool?: string;
  ua_family?: UserAgentFamily;
  uah?: string;
  issuer: string;
  sig: SettlementSignature;
};

export interface SignedSettlementReceipt {
  receipt: SettlementReceipt;
  /** `sha256:` + hex of the canonical bytes that were signed (the receipt without `sig`). */
  digest: string;
}

/**
 * Builds and signs the receipt for `settlement`. `ua` absent means the User-Agent is not known
 * (no `ua_family`, no `uah`); an empty `ua` means the client sent none (`ua_family` `none`,
 * and no hash, since there is nothing to tell apart).
 */
export function signSettlementReceipt(
  settlement: Settlement,
  signer: Ed25519Signer,
  issuedAt: string,
): SignedSettlementReceipt {
  const client: Pick<SettlementReceipt, "rpc" | "tool" | "ua_family" | "uah"> = {};
  if (typeof settlement.rpc === "string") client.rpc = settlement.rpc;
  if (typeof settlement.tool === "string") client.tool = settlement.tool;
  if (typeof settlement.ua === "string") {
    client.ua_family = userAgentFamily(settlement.ua);
    if (settlement.ua !== "") client.uah = userAgentHash(settlement.ua);
  }
  const unsigned: Omit<SettlementReceipt, "sig"> = {
    kind: SETTLEMENT_RECEIPT_KIND,
    version: SETTLEMENT_RECEIPT_VERSION,
    issued_at: issuedAt,
    network: settlement.network,
    asset: settlement.asset,
    amount: settlement.amount,
    pay_to: settlement.payTo,
    tx: settlement.tx,
    path: settlement.path,
    ...client,
    issuer: signer.did,
  };
  const signed = canonicalBytes(fromPlain(unsigned));
  const sig: SettlementSignature = {
    alg: "ed25519",
    key: signer.did,
    value: signEd25519(signer, signed),
  };
  return { receipt: { ...unsigned, sig }, digest: sha256Digest(signed) };
}
