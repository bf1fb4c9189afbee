/**
 * The x402 nonce ledger: one reservation per EIP-3009 authorization (network, asset, payer,
 * nonce), taken after local verification and before the facilitator is asked to verify.
 *
 * It is the lock protocols.md §1.7 asks for: two requests carrying the same authorization
 * both pass local verification, but only the first reservation succeeds, so only one of them
 * can reach settlement. It is also the cheap replay check: a seen authorization is refused
 * without a facilitator round trip.
 *
 * Lifetime and release (the interface is what Redis `SET key 1 NX PXAT t` and `DEL` can do):
 * - A reservation lasts until `expiresAtMs`, which callers set from the authorization's
 *   `validBefore` (see `reservationExpiryMs`). After `validBefore` the token contract refuses
 *   the authorization anyway and local verification refuses it as expired, so forgetting it
 *   then loses nothing, and the ledger stays bounded by the payments still settleable.
 * - `release` is for one case only: when it is certain no settlement was attempted (the
 *   facilitator declined or could not be reached at /verify, or the paid handler failed and
 *   settlement was skipped).
 *   Once /settle has been called — whatever it answered, timeout included — the reservation
 *   is kept: the transfer may still land on chain, and a retry must sign a fresh nonce.
 */

export interface NonceKey {
  /** CAIP-2 network. */
  readonly network: string;
  readonly asset: string;
  readonly payer: string;
  readonly nonce: string;
}

export interface NonceLedger {
  /**
   * Atomically records `key` unless it is already recorded; true when this call recorded it.
   * Concurrent calls for one key: exactly one gets true.
   */
  reserve(key: NonceKey, expiresAtMs: number): Promise<boolean>;
  /** Forgets `key` (only when no settlement was attempted for it). */
  release(key: NonceKey): Promise<void>;
  close(): Promise<void>;
}

/** The ledger's key for an authorization; addresses and nonce compare case-insensitively. */
export function nonceLedgerKey(key: NonceKey): string {
  return `x402:nonce:${nonceIdentity(key)}`;
}

/** The authorization's identity, `network:asset:payer:nonce` (the Redis key's hash tag). */
export function nonceIdentity(key: NonceKey): string {
  const lower = (text: string) => text.toLowerCase();
  return `${key.network}:${lower(key.asset)}:${lower(key.payer)}:${lower(key.nonce)}`;
}

/** Kept past `validBefore` for clock skew between us and the chain's block timestamps. */
export const RESERVATION_GRACE_SECONDS = 120;
/** 9999-12-31T23:59:59Z: a `validBefore` of 2^256 - 1 still maps to a storable expiry. */
const LATEST_EXPIRY_MS = 253_402_300_799_000;

/** When a reservation for an authorization valid until `validBefore` (Unix s) may be dropped. */
export function reservationExpiryMs(validBefore: bigint): number {
  const seconds = validBefore + BigInt(RESERVATION_GRACE_SECONDS);
  const ms = seconds * 1000n;
  return ms > BigInt(LATEST_EXPIRY_MS) ? LATEST_EXPIRY_MS : Number(ms);
}

export interface MemoryNonceLedgerOptions {
  /** Milliseconds since the epoch (`Date.now` by default). */
  now?: () => number;
}

/** The embedded ledger: one process's memory. Expired entries are swept as the map grows. */
export class MemoryNonceLedger implements NonceLedger {
  readonly #entries = new Map<string, number>();
  readonly #now: () => number;
  #sweepAt = 1024;

  constructor(options: MemoryNonceLedgerOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  async reserve(key: NonceKey, expiresAtMs: number): Promise<boolean> {
    const id = nonceLedgerKey(key);
    const now = this.#now();
    const existing = this.#entries.get(id);
    if (existing !== undefined && existing > now) return false;
    this.#entries.set(id, expiresAtMs);
    if (this.#entries.size >= this.#sweepAt) this.#sweep(now);
    return true;
  }

  async release(key: NonceKey): Promise<void> {
    this.#entries.delete(nonceLedgerKey(key));
  }

  async close(): Promise<void> {
    this.#entries.clear();
  }

  /** Entries held, including expired ones not swept yet. */
  get size(): number {
    return this.#entries.size;
  }

  // Sweeping when the map doubles keeps the cost amortised O(1) per reservation.
  #sweep(now: number): void {
    for (const [id, expiresAt] of this.#entries) {
      if (expiresAt <= now) this.#entries.delete(id);
    }
    this.#sweepAt = Math.max(1024, this.#entries.size * 2);
  }
}
