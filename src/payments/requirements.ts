/**
 * x402 payment requirements (protocols.md §1.2–§1.4) built from the service's configuration.
 *
 * Every option is built once per request in both wire forms from the same settings, and
 * deterministically: a v2 client echoes the option it chose verbatim and the payment is
 * accepted only if that echo deep-equals one of ours, so nothing time- or request-dependent
 * may enter a v2 requirement (the resource URL lives outside it, in `resource`).
 */
import { type JsonObject, type JsonValue, jsonObject } from "../verifier/json/value.js";
import { PaymentConfigError, PaymentError } from "./errors.js";
import { type Address, checksumAddress, isAddressText, parseUint256 } from "./formats.js";

export interface NetworkInfo {
  /** CAIP-2 id, the v2 name (`eip155:8453`). */
  readonly caip2: string;
  /** The v1 name (`base`). */
  readonly v1Name: string;
  readonly chainId: number;
}

/** The EVM networks x402 v1 names (a subset of the SDK's map: the ones with USDC and EIP-3009). */
export const NETWORKS: readonly NetworkInfo[] = [
  { caip2: "eip155:8453", v1Name: "base", chainId: 8453 },
  { caip2: "eip155:84532", v1Name: "base-sepolia", chainId: 84532 },
  { caip2: "eip155:43114", v1Name: "avalanche", chainId: 43114 },
  { caip2: "eip155:43113", v1Name: "avalanche-fuji", chainId: 43113 },
  { caip2: "eip155:1", v1Name: "ethereum", chainId: 1 },
  { caip2: "eip155:11155111", v1Name: "sepolia", chainId: 11155111 },
  { caip2: "eip155:137", v1Name: "polygon", chainId: 137 },
  { caip2: "eip155:80002", v1Name: "polygon-amoy", chainId: 80002 },
];

export function networkByCaip2(caip2: string): NetworkInfo | null {
  return NETWORKS.find((network) => network.caip2 === caip2) ?? null;
}

export function networkByV1Name(name: string): NetworkInfo | null {
  return NETWORKS.find((network) => network.v1Name === name) ?? null;
}

/** The token's EIP-712 domain name and version (`extra` in a requirement). */
export interface TokenDomain {
  readonly name: string;
  readonly version: string;
}

export interface KnownToken {
  readonly address: Address;
  readonly domain: TokenDomain;
  readonly decimals: number;
}

/** USDC where its EIP-712 domain is known (protocols.md §1.4 table). */
export const KNOWN_USDC: Readonly<Record<string, KnownToken>> = {
  "eip155:8453": {
    address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    domain: { name: "USD Coin", version: "2" },
    decimals: 6,
  },
  "eip155:84532": {
    address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    domain: { name: "USDC", version: "2" },
    decimals: 6,
  },
};

export const DEFAULT_NETWORK = "eip155:8453";

/** What a payment buys: one call, a lease, or a day pass (service.md §9). */
export type OfferKind = "call" | "lease" | "day";

export const DEFAULT_PRICES_USD: Readonly<Record<OfferKind, string>> = {
  call: "0.01",
  lease: "0.01",
  day: "0.50",
};

export const DEFAULT_MAX_TIMEOUT_SECONDS = 60;

export interface PaymentSettingsInput {
  /** `X402_PAY_TO`; mixed case must be a valid EIP-55 checksum. */
  payTo: string;
  /** `X402_NETWORK`: CAIP-2 (`eip155:8453`) or a v1 name (`base`). */
  network?: string;
  /** `X402_ASSET`: defaults to the network's USDC. */
  asset?: string;
  /** Required when the asset is not a known USDC. */
  assetDomain?: TokenDomain;
  assetDecimals?: number;
  /** Prices in USD as decimal strings (`"0.01"`). */
  pricesUsd?: Partial<Record<OfferKind, string>>;
  maxTimeoutSeconds?: number;
  /** Only used to word the lease and day-pass descriptions. */
  leaseSeconds?: number;
  dayPassSeconds?: number;
}

export interface PaymentSettings {
  readonly network: NetworkInfo;
  readonly asset: Address;
  readonly domain: TokenDomain;
  readonly decimals: number;
  readonly payTo: Address;
  /** Atomic units of the asset. */
  readonly prices: Readonly<Record<OfferKind, bigint>>;
  readonly maxTimeoutSeconds: number;
  readonly leaseSeconds: number;
  readonly dayPassSeconds: number;
}

const USD_PRICE = /^(0|[1-9][0-9]{0,8})(?:\.([0-9]{1,18}))?$/;

/** `"0.01"` USD → atomic units of a USD stablecoin with `decimals` decimals (10000 for USDC). */
export function usdToAtomic(usd: string, decimals: number): bigint {
  const match = USD_PRICE.exec(usd);
  if (match === null) throw new PaymentConfigError(`price '${usd}' is not a decimal USD amount`);
  const fraction = match[2] ?? "";
  if (fraction.replace(/0+$/, "").length > decimals) {
    throw new PaymentConfigError(`price '${usd}' has more than ${decimals} decimals`);
  }
  const atomic = BigInt(match[1] + fraction.padEnd(decimals, "0").slice(0, decimals));
  if (atomic === 0n) throw new PaymentConfigError(`price '${usd}' must be more than zero`);
  return atomic;
}

function resolveNetwork(text: string): NetworkInfo {
  const network = networkByCaip2(text) ?? networkByV1Name(text);
  if (network === null) {
    const known = NETWORKS.map((entry) => entry.caip2).join(", ");
    throw new PaymentConfigError(`network '${text}' is not supported (one of ${known})`);
  }
  return network;
}

function configuredAddress(label: string, text: string): Address {
  const address = checksumAddress(text);
  if (address === null) {
    throw new PaymentConfigError(`${label} '${text}' is not an address (or fails its checksum)`);
  }
  return address;
}

function wholeNumber(label: string, value: number, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new PaymentConfigError(`${label} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

/** Validates the configuration once, at startup; every later step trusts the result. */
export function paymentSettings(input: PaymentSettingsInput): PaymentSettings {
  const network = resolveNetwork(input.network ?? DEFAULT_NETWORK);
  const known = KNOWN_USDC[network.caip2];
  const assetText = input.asset ?? known?.address;
  if (assetText === undefined) {
    throw new PaymentConfigError(`network ${network.caip2} has no default asset; configure one`);
  }
  const asset = configuredAddress("asset", assetText);
  const isKnownUsdc = known !== undefined && known.address.toLowerCase() === asset.toLowerCase();
  const domain = input.assetDomain ?? (isKnownUsdc ? known.domain : undefined);
  if (domain === undefined || domain.name === "" || domain.version === "") {
    throw new PaymentConfigError(
      `asset ${asset} on ${network.caip2} needs its EIP-712 domain name and version`,
    );
  }
  const decimals = wholeNumber("asset decimals", input.assetDecimals ?? 6, 0, 36);
  const prices = {} as Record<OfferKind, bigint>;
  for (const kind of ["call", "lease", "day"] as const) {
    prices[kind] = usdToAtomic(input.pricesUsd?.[kind] ?? DEFAULT_PRICES_USD[kind], decimals);
  }
  // v1 payloads name no requirement, only scheme and network; the amount is what tells a
  // lease from a day pass, so the two must differ.
  if (prices.lease === prices.day) {
    throw new PaymentConfigError("the lease and the day pass must have different prices");
  }
  return {
    network,
    asset,
    domain: { name: domain.name, version: domain.version },
    decimals,
    payTo: configuredAddress("payTo", input.payTo),
    prices,
    // At least 10 s: verification wants `validBefore` 6 s ahead of now (protocols.md §1.5).
    maxTimeoutSeconds: wholeNumber(
      "maxTimeoutSeconds",
      input.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS,
      10,
      86_400,
    ),
    leaseSeconds: wholeNumber("leaseSeconds", input.leaseSeconds ?? 300, 1, 31_536_000),
    dayPassSeconds: wholeNumber("dayPassSeconds", input.dayPassSeconds ?? 86_400, 1, 31_536_000),
  };
}

/** One acceptable `exact` payment, with its wire forms where known. */
export interface ExactRequirement {
  readonly network: NetworkInfo;
  readonly asset: Address;
  readonly payTo: Address;
  readonly amount: bigint;
  readonly maxTimeoutSeconds: number;
  readonly domain: TokenDomain;
  /** The v1 `PaymentRequirements` object, or null when this requirement came in as v2. */
  readonly v1: JsonObject | null;
  /** The v2 `PaymentRequirements` object, or null when this requirement came in as v1. */
  readonly v2: JsonObject | null;
}

/** One option of our own 402 challenge: both wire forms, and what it buys. */
export interface PaymentOption extends ExactRequirement {
  readonly kind: OfferKind;
  readonly v1: JsonObject;
  readonly v2: JsonObject;
}

export interface ResourceInfo {
  /** Absolute URL of the resource (v1 `resource`, v2 `resource.url`). */
  readonly url: string;
  readonly description: string;
  readonly mimeType: string;
}

export interface PaymentRequirementSet {
  readonly resource: ResourceInfo;
  readonly options: readonly PaymentOption[];
}

export interface RequirementsRequest {
  resource: { url: string; description: string; mimeType?: string };
  /** Options offered, in order: `["call"]`, or `["lease", "day"]` for the pass routes. */
  offers: readonly OfferKind[];
}

/** `300` → `5-minute`, `86400` → `24-hour`. */
export function durationLabel(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600}-hour`;
  if (seconds % 60 === 0) return `${seconds / 60}-minute`;
  return `${seconds}-second`;
}

function offerDescription(settings: PaymentSettings, kind: OfferKind, description: string): string {
  if (kind === "lease") return `${description} (${durationLabel(settings.leaseSeconds)} lease)`;
  if (kind === "day") return `${description} (${durationLabel(settings.dayPassSeconds)} day pass)`;
  return description;
}

function extraOf(domain: TokenDomain): JsonObject {
  return jsonObject({ name: domain.name, version: domain.version });
}

export function paymentRequirements(
  settings: PaymentSettings,
  request: RequirementsRequest,
): PaymentRequirementSet {
  const resource: ResourceInfo = {
    url: request.resource.url,
    description: request.resource.description,
    mimeType: request.resource.mimeType ?? "application/json",
  };
  const options = request.offers.map((kind): PaymentOption => {
    const amount = settings.prices[kind];
    const v1 = jsonObject({
      scheme: "exact",
      network: settings.network.v1Name,
      maxAmountRequired: amount.toString(),
      resource: resource.url,
      description: offerDescription(settings, kind, resource.description),
      mimeType: resource.mimeType,
      payTo: settings.payTo,
      maxTimeoutSeconds: settings.maxTimeoutSeconds,
      asset: settings.asset,
      extra: extraOf(settings.domain),
    });
    const v2 = jsonObject({
      scheme: "exact",
      network: settings.network.caip2,
      amount: amount.toString(),
      asset: settings.asset,
      payTo: settings.payTo,
      maxTimeoutSeconds: settings.maxTimeoutSeconds,
      extra: extraOf(settings.domain),
    });
    return {
      kind,
      network: settings.network,
      asset: settings.asset,
      payTo: settings.payTo,
      amount,
      maxTimeoutSeconds: settings.maxTimeoutSeconds,
      domain: settings.domain,
      v1,
      v2,
    };
  });
  return { resource, options };
}

function requirementsError(detail: string): PaymentError {
  return new PaymentError("invalid_payment_requirements", detail);
}

function stringMember(object: JsonObject, key: string): string {
  const value = object.get(key);
  if (typeof value !== "string") throw requirementsError(`'${key}' must be a string`);
  return value;
}

/**
 * A requirement received as JSON (by a facilitator, in `paymentRequirements`), checked for
 * what verifying an `exact` EVM payment needs: a known network, addresses, an amount and the
 * token's EIP-712 domain.
 */
export function requirementFromWire(value: JsonValue, x402Version: 1 | 2): ExactRequirement {
  if (!(value instanceof Map)) throw requirementsError("requirements must be an object");
  const scheme = stringMember(value, "scheme");
  if (scheme !== "exact") throw new PaymentError("invalid_scheme", `scheme '${scheme}'`);
  const networkName = stringMember(value, "network");
  const network = x402Version === 1 ? networkByV1Name(networkName) : networkByCaip2(networkName);
  if (network === null) throw new PaymentError("invalid_network", `network '${networkName}'`);
  const amount = parseUint256(
    stringMember(value, x402Version === 1 ? "maxAmountRequired" : "amount"),
  );
  if (amount === null) throw requirementsError("the amount must be a uint256 decimal string");
  const asset = stringMember(value, "asset");
  const payTo = stringMember(value, "payTo");
  if (!isAddressText(asset) || !isAddressText(payTo)) {
    throw requirementsError("'asset' and 'payTo' must be addresses");
  }
  const timeout = value.get("maxTimeoutSeconds");
  if (typeof timeout !== "number" || timeout < 0) {
    throw requirementsError("'maxTimeoutSeconds' must be a whole number");
  }
  const extra = value.get("extra");
  const name = extra instanceof Map ? extra.get("name") : undefined;
  const version = extra instanceof Map ? extra.get("version") : undefined;
  if (typeof name !== "string" || typeof version !== "string") {
    throw requirementsError("'extra' must carry the token's EIP-712 domain name and version");
  }
  return {
    network,
    asset,
    payTo,
    amount,
    maxTimeoutSeconds: timeout,
    domain: { name, version },
    v1: x402Version === 1 ? value : null,
    v2: x402Version === 2 ? value : null,
  };
}
