/**
 * The distributed digest cache: entries in Redis, shared by every instance, with the same TTL
 * and oldest-first limit as the memory cache (`maxEntries` counts all instances together).
 *
 * Layout under the prefix: `cache:{digests}:entry:<key>` holds the entry as JSON with a Redis
 * TTL, and `cache:{digests}:index` is a sorted set of the keys scored by `storedAtMs`, so the
 * oldest entries are found (and evicted, with their values) in the same Lua script that writes
 * a new one. That script touches entries it finds in the index, so on a Redis Cluster every key
 * of the cache shares one hash tag, `{digests}`, and one slot: the cache lives on one master
 * (issue 36; docs/service-decisions.md says what that costs and what would spread it).
 *
 * Time: `storedAtMs` comes from the writing instance's clock and expiry is judged on read
 * against the reading instance's clock, exactly as the memory cache does. The Redis TTL
 * (`ttlSeconds`, on Redis's clock) is only a backstop that frees memory. Instances are assumed
 * NTP-synchronised: a skew of s seconds shifts `age_s` and the expiry by s, and a reader whose
 * clock is behind the writer's sees a negative age, which the route reports as 0.
 */
import type { CachedVerdict, DigestCache, DigestCacheLimits } from "../cache/digest-cache.js";
import { LuaScript, type RedisConnection } from "./connection.js";
import { taggedKey } from "./keys.js";

// KEYS[1] index, KEYS[2] entry. ARGV: 1 key, 2 JSON, 3 storedAtMs, 4 TTL ms, 5 expiry cutoff
// (entries stored at or before it are expired), 6 maxEntries, 7 prefix of entry keys.
// The index lives as long as its youngest entry can, so an idle cache leaves nothing behind.
const SET = new LuaScript(`
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local function drop(members)
  for _, member in ipairs(members) do
    redis.call('DEL', ARGV[7] .. member)
    redis.call('ZREM', KEYS[1], member)
  end
end
drop(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[5]))
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[6])
if excess > 0 then drop(redis.call('ZRANGE', KEYS[1], 0, excess - 1)) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 0
`);

// KEYS[1] index, KEYS[2] entry. ARGV: 1 key, 2 expiry cutoff. Drops the entry only if it is
// still the expired one: another instance may have rewritten it since it was read.
const DROP_EXPIRED = new LuaScript(`
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) <= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
`);

/** The hash tag of every key of the cache (keys.ts): its script needs them in one slot. */
export const DIGEST_CACHE_TAG = "digests";

export class RedisDigestCache implements DigestCache {
  readonly #connection: RedisConnection;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  /** Uses `connection` without owning it: `close()` leaves it open for the other stores. */
  constructor(
    connection: RedisConnection,
    limits: DigestCacheLimits,
    now: () => number = Date.now,
  ) {
    if (!Number.isSafeInteger(limits.maxEntries) || limits.maxEntries < 0) {
      throw new RangeError(`maxEntries is a whole number ≥ 0, got ${limits.maxEntries}`);
    }
    this.#ttlMs = Math.round(limits.ttlSeconds * 1000);
    if (!(this.#ttlMs > 0))
      throw new RangeError(`ttlSeconds must be > 0, got ${limits.ttlSeconds}`);
    this.#connection = connection;
    this.#maxEntries = limits.maxEntries;
    this.#now = now;
  }

  get #index(): string {
    return taggedKey(this.#connection.prefix, "cache", DIGEST_CACHE_TAG, "index");
  }

  get #entryPrefix(): string {
    return `${taggedKey(this.#connection.prefix, "cache", DIGEST_CACHE_TAG, "entry")}:`;
  }

  async get(key: string): Promise<CachedVerdict | null> {
    const text = await this.#connection.run((client) => client.get(this.#entryPrefix + key));
    if (text === null) return null;
    const entry = parseEntry(text);
    const now = this.#now();
    if (now - entry.storedAtMs < this.#ttlMs) return entry;
    await this.#connection.run((client) =>
      DROP_EXPIRED.run(client, [this.#index, this.#entryPrefix + key], [key, now - this.#ttlMs]),
    );
    return null;
  }

  async set(key: string, value: Omit<CachedVerdict, "storedAtMs">): Promise<void> {
    const now = this.#now();
    const entry: CachedVerdict = {
      verdictJson: value.verdictJson,
      receipt:
        "json" in value.receipt ? { json: value.receipt.json } : { error: value.receipt.error },
      verifiedAt: value.verifiedAt,
      storedAtMs: now,
    };
    await this.#connection.run((client) =>
      SET.run(
        client,
        [this.#index, this.#entryPrefix + key],
        [
          key,
          JSON.stringify(entry),
          now,
          this.#ttlMs,
          now - this.#ttlMs,
          this.#maxEntries,
          this.#entryPrefix,
        ],
      ),
    );
  }

  /** Entries currently indexed by all instances (expired ones included until the next write). */
  async size(): Promise<number> {
    return await this.#connection.run((client) => client.zcard(this.#index));
  }

  async close(): Promise<void> {}
}

/** An entry read back; anything else under our key is a fault, which callers treat as a miss. */
function parseEntry(text: string): CachedVerdict {
  const fail = (): never => {
    throw new Error("malformed digest cache entry");
  };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail();
  }
  if (typeof value !== "object" || value === null) return fail();
  const { verdictJson, receipt, verifiedAt, storedAtMs } = value as Record<string, unknown>;
  if (typeof verdictJson !== "string" || typeof verifiedAt !== "string") return fail();
  if (typeof storedAtMs !== "number" || !Number.isFinite(storedAtMs)) return fail();
  if (typeof receipt !== "object" || receipt === null) return fail();
  const { json, error } = receipt as Record<string, unknown>;
  if (typeof json === "string") return { verdictJson, receipt: { json }, verifiedAt, storedAtMs };
  if (typeof error === "string") return { verdictJson, receipt: { error }, verifiedAt, storedAtMs };
  return fail();
}
