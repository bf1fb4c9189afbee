/**
 * How an anonymous call is counted (docs/access-decisions.md, "The anonymous cap"): against
 * its address's share (an IPv4 address, an IPv6 /64), its network's share (an IPv4 /24, an
 * IPv6 /48), and the anonymous cap behind every share, all or none. The top
 * `newClientReservePercent` of the cap are kept for an address's first calls of the day, so
 * once returning clients have spent the rest a new client still gets its evaluation-key
 * challenge and its key.
 *
 * The reserve needs no counter of its own: the cap is one counter, and a returning address's
 * call is simply counted against a lower limit (the cap less the reserve) than a new
 * address's. Whether the address is new is read from its share's own count, in the same
 * atomic step that counts it, so two processes cannot both see it new past its first calls.
 *
 * Every counter is named by an HMAC of the network (`addressCounter`), so no store holds an
 * address.
 */
import {
  type CapCharge,
  type CapDecision,
  type CapStore,
  consumeAll,
  refundAll,
  type SharedCapDecision,
} from "./caps.js";
import { addressCounter, CLIENT, SITE } from "./evaluation/client-address.js";
import { ANONYMOUS } from "./principal.js";

/** Calls of the day an address may still take from the reserve: a challenge, a key, a retry. */
export const NEW_CLIENT_CALLS = 3;

export const ANONYMOUS_ADDRESS_BUCKET_PREFIX = "anonymous-address:";
export const ANONYMOUS_NETWORK_BUCKET_PREFIX = "anonymous-network:";

export interface AnonymousCapLimits {
  /** `ANON_DAILY_CAP`: all anonymous calls together. */
  dailyCap: number;
  /** `ANON_ADDRESS_DAILY_CAP`: one address (IPv6: one /64). */
  perAddressDailyCap: number;
  /** `ANON_NETWORK_DAILY_CAP`: one network (IPv4 /24, IPv6 /48). */
  perNetworkDailyCap: number;
  /** `ANON_NEW_CLIENT_RESERVE_PERCENT`: the top of the cap kept for addresses' first calls. */
  newClientReservePercent: number;
}

/** The share buckets of a client address; an address that cannot be read shares `unknown`. */
export function anonymousShareBuckets(
  clientAddress: string | undefined,
  key: Uint8Array,
): { address: string; network: string } {
  const name = (width: typeof CLIENT) =>
    (clientAddress === undefined ? null : addressCounter(clientAddress, key, width)) ?? "unknown";
  return {
    address: `${ANONYMOUS_ADDRESS_BUCKET_PREFIX}${name(CLIENT)}`,
    network: `${ANONYMOUS_NETWORK_BUCKET_PREFIX}${name(SITE)}`,
  };
}

export interface AnonymousCapDecision extends SharedCapDecision {
  /** Every bucket counted, in order (address, network, cap), for `consumeAll`'s index fields. */
  charges: CapCharge[];
}

/** The calls of `dailyCap` only new clients may take. */
export function newClientReserve(
  limits: Pick<AnonymousCapLimits, "dailyCap" | "newClientReservePercent">,
): number {
  return Math.floor((limits.dailyCap * limits.newClientReservePercent) / 100);
}

/** Calls an allowed decision says its bucket held before this one. */
function countBefore(decision: CapDecision): number {
  return decision.limit - decision.remaining - 1;
}

/**
 * Counts one anonymous call from `clientAddress` against its address, its network and the
 * anonymous cap, or against none of them.
 */
export async function consumeAnonymous(
  store: CapStore,
  clientAddress: string | undefined,
  key: Uint8Array,
  limits: AnonymousCapLimits,
  nowMs: number,
): Promise<AnonymousCapDecision> {
  const buckets = anonymousShareBuckets(clientAddress, key);
  const addressCharge: CapCharge = { bucket: buckets.address, limit: limits.perAddressDailyCap };
  const addressDecision = await store.consume(addressCharge.bucket, addressCharge.limit, nowMs);
  const returning = !addressDecision.allowed || countBefore(addressDecision) >= NEW_CLIENT_CALLS;
  const capLimit = returning ? limits.dailyCap - newClientReserve(limits) : limits.dailyCap;
  const charges: CapCharge[] = [
    addressCharge,
    { bucket: buckets.network, limit: limits.perNetworkDailyCap },
    { bucket: ANONYMOUS, limit: capLimit },
  ];
  if (!addressDecision.allowed) {
    return { decision: addressDecision, refusedBy: 0, shownBy: 0, charges };
  }
  let rest: SharedCapDecision;
  try {
    rest = await consumeAll(store, charges.slice(1), nowMs);
  } catch (error) {
    await refundAll(store, [addressCharge.bucket], nowMs);
    throw error;
  }
  if (rest.refusedBy !== null) {
    await refundAll(store, [addressCharge.bucket], nowMs);
    return {
      decision: rest.decision,
      refusedBy: rest.refusedBy + 1,
      shownBy: rest.shownBy + 1,
      charges,
    };
  }
  // The headers describe the bucket that will refuse first.
  if (addressDecision.remaining <= rest.decision.remaining) {
    return { decision: addressDecision, refusedBy: null, shownBy: 0, charges };
  }
  return { decision: rest.decision, refusedBy: null, shownBy: rest.shownBy + 1, charges };
}
