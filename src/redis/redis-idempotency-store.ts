/**
 * Distributed mode's `Idempotency-Key` entries: one Redis key per entry, claimed with a Lua
 * script (read, or claim when absent) so that two instances never both run one key, answered
 * with a 24 h expiry. Errors propagate: the plugin refuses (503) rather than run a retry it
 * cannot tell from a first request.
 *
 * Bounded per principal, as embedded mode's store is (issue 34's attack: a kept answer is up
 * to 256 KiB for 24 h, so a key at 1,000 calls a day could hold about 250 MiB of Redis). Each
 * owner (`idempotencyOwner`) has a ledger beside its entries, under one hash tag so that one
 * script sees them all on one node: a sorted set of its answered entries by expiry, and a hash
 * of their sizes with their total. Keeping an answer past the owner's bytes or entries drops
 * the owner's own oldest answers first (their retries then run again, as after an expiry), so
 * one principal's flood never evicts another's answers; an answer larger than the whole share
 * is sent but not kept. The bound across principals is Redis' own `maxmemory` (noeviction: a
 * claim then fails and the request is refused with 503, nothing half-stored).
 */
import {
  decodeEntry,
  encodeAnswer,
  IDEMPOTENCY_CLAIM_MS,
  IDEMPOTENCY_TTL_MS,
  type IdempotencyBegin,
  type IdempotencyStore,
  newClaim,
  type StoredAnswer,
} from "../access/idempotency-store.js";
import { LuaScript, type RedisConnection } from "./connection.js";
import { taggedKey } from "./keys.js";

// KEYS[1] the entry; ARGV[1] the claim; ARGV[2] its lifetime (ms). Returns the entry there
// was, or false once claimed.
const BEGIN = new LuaScript(`
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`);

// KEYS[1] the entry; KEYS[2] the owner's ledger (entry → expiry); KEYS[3] its sizes (entry →
// bytes, and '#total'). ARGV[1] the claim that must still be there; ARGV[2] the answer (or ''
// to drop the claim); ARGV[3] the answer's lifetime (ms); ARGV[4] now (ms); ARGV[5] the
// owner's bytes; ARGV[6] its entries; ARGV[7] the entry's name in the ledger; ARGV[8] what an
// entry's key is, less its name (the ledger's entries are keys of this owner's tag).
// Returns 0 when the claim was gone, 1 when done, 2 when the answer was too large to keep.
const SETTLE = new LuaScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  return 1
end
local now = tonumber(ARGV[4])
local max_bytes = tonumber(ARGV[5])
local max_entries = tonumber(ARGV[6])
local size = string.len(ARGV[2])
local function forget(name)
  local bytes = tonumber(redis.call('HGET', KEYS[3], name) or '0')
  redis.call('HDEL', KEYS[3], name)
  redis.call('HINCRBY', KEYS[3], '#total', -bytes)
  redis.call('ZREM', KEYS[2], name)
end
for _, name in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do forget(name) end
if size > max_bytes then
  redis.call('DEL', KEYS[1])
  return 2
end
local total = tonumber(redis.call('HGET', KEYS[3], '#total') or '0')
while total + size > max_bytes or redis.call('ZCARD', KEYS[2]) >= max_entries do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not oldest then break end
  forget(oldest)
  redis.call('DEL', ARGV[8] .. oldest)
  total = tonumber(redis.call('HGET', KEYS[3], '#total') or '0')
end
local expires = now + tonumber(ARGV[3])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], expires, ARGV[7])
redis.call('HSET', KEYS[3], ARGV[7], size)
redis.call('HINCRBY', KEYS[3], '#total', size)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return 1
`);

/** An owner's share of Redis for kept answers: embedded mode's defaults (a quarter of each). */
export interface RedisIdempotencyLimits {
  /** Bytes of kept answers per owner (default 16 MiB). */
  maxBytesPerOwner?: number;
  /** Kept answers per owner (default 2,500). */
  maxEntriesPerOwner?: number;
}

/** The tag of entries begun without an owner (only tests do): one shared ledger. */
const UNOWNED_TAG = "unowned";

export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #connection: RedisConnection;
  readonly #maxBytesPerOwner: number;
  readonly #maxEntriesPerOwner: number;
  readonly #now: () => number;

  /** Uses `connection` without owning it: `close()` leaves it open for the other stores. */
  constructor(
    connection: RedisConnection,
    limits: RedisIdempotencyLimits = {},
    now: () => number = Date.now,
  ) {
    this.#connection = connection;
    this.#maxBytesPerOwner = limits.maxBytesPerOwner ?? 16 * 1024 * 1024;
    this.#maxEntriesPerOwner = limits.maxEntriesPerOwner ?? 2_500;
    this.#now = now;
  }

  /** The entry's key: under its owner's tag, with the owner's ledger. */
  key(entry: string, owner?: string): string {
    return `${this.#entryBase(owner)}${entry}`;
  }

  #entryBase(owner: string | undefined): string {
    return taggedKey(this.#connection.prefix, "idempotency", owner || UNOWNED_TAG, "entry:");
  }

  #ledger(owner: string | undefined): [string, string] {
    const tag = owner || UNOWNED_TAG;
    return [
      taggedKey(this.#connection.prefix, "idempotency", tag, "ledger"),
      taggedKey(this.#connection.prefix, "idempotency", tag, "sizes"),
    ];
  }

  async begin(entry: string, fingerprint: string, owner?: string): Promise<IdempotencyBegin> {
    const claim = newClaim(fingerprint);
    const held = await this.#connection.run((client) =>
      BEGIN.run(client, [this.key(entry, owner)], [claim, IDEMPOTENCY_CLAIM_MS]),
    );
    if (typeof held === "string") return decodeEntry(held);
    return { state: "claimed", claim };
  }

  async complete(
    entry: string,
    claim: string,
    fingerprint: string,
    answer: StoredAnswer,
    owner?: string,
  ): Promise<void> {
    await this.#settle(entry, claim, encodeAnswer(fingerprint, answer), owner);
  }

  async release(entry: string, claim: string, owner?: string): Promise<void> {
    await this.#settle(entry, claim, "", owner);
  }

  async #settle(entry: string, claim: string, answer: string, owner?: string): Promise<void> {
    const [ledger, sizes] = this.#ledger(owner);
    await this.#connection.run((client) =>
      SETTLE.run(
        client,
        [this.key(entry, owner), ledger, sizes],
        [
          claim,
          answer,
          IDEMPOTENCY_TTL_MS,
          this.#now(),
          this.#maxBytesPerOwner,
          this.#maxEntriesPerOwner,
          entry,
          this.#entryBase(owner),
        ],
      ),
    );
  }

  async close(): Promise<void> {}
}
