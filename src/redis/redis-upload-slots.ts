/**
 * `CRYSTAL_UPLOADS_PER_KEY` across the deployment (issue 34, finding 6): a principal's upload
 * slots in Redis, so N web processes hold a key to one limit, not N (one key held 8 uploads
 * over two webs where 4 are allowed).
 *
 * One sorted set per principal, a member per slot scored with its expiry: the acquire script
 * drops expired members, counts, and adds one if there is room; the release is one ZREM. A web
 * killed mid-upload leaks its slot only until that slot's own expiry (the body deadline and a
 * minute for the answer). A single counter with INCR/DECR and a TTL would not do that: each
 * new upload renews the TTL, so a key that keeps uploading would keep a leaked slot for good.
 * Two commands per upload either way.
 *
 * While Redis cannot answer (circuit breaker open, or any error) slots are counted in the
 * process (`InProcessUploadSlots`): the limit then holds per web, as before, and the upload is
 * not refused for a dependency it does not need.
 */
import { createHash, randomBytes } from "node:crypto";
import type { InProcessUploadSlots, UploadSlot, UploadSlots } from "../access/upload-slots.js";
import { LuaScript, type RedisConnection } from "./connection.js";
import { taggedKey } from "./keys.js";

// KEYS[1] the principal's slots (a sorted set: member = slot id, score = its expiry, ms).
// ARGV[1] the slot id, ARGV[2] the caller's instant, ARGV[3] the slot's expiry, ARGV[4] the
// limit. The set expires with its last slot. Instants are the caller's clock, as for the
// caps: skew between webs only moves when a leaked slot is dropped.
const ACQUIRE = new LuaScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(last - tonumber(ARGV[2]))))
return 1
`);

export interface RedisUploadSlotsOptions {
  /** How long a slot lives if its release never comes (a web killed mid-upload). */
  slotTtlMs: number;
  /** Where slots are counted while Redis cannot answer. */
  fallback: InProcessUploadSlots;
  now?: () => number;
}

export class RedisUploadSlots implements UploadSlots {
  readonly limit: number;
  readonly #connection: RedisConnection;
  readonly #options: RedisUploadSlotsOptions;
  readonly #now: () => number;

  /** Uses `connection` without owning it. */
  constructor(connection: RedisConnection, options: RedisUploadSlotsOptions) {
    this.#connection = connection;
    this.#options = options;
    this.limit = options.fallback.limit;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The slots of `principal`, under a hash of it (no principal's name in Redis, one form for
   * every kind), in braces so that the key has one Redis Cluster slot.
   */
  key(principal: string): string {
    const hash = createHash("sha256").update(principal, "utf8").digest("hex").slice(0, 32);
    return taggedKey(this.#connection.prefix, "uploads", hash);
  }

  async acquire(principal: string): Promise<UploadSlot | null> {
    const key = this.key(principal);
    const id = randomBytes(12).toString("base64url");
    const now = this.#now();
    let granted: unknown;
    try {
      granted = await this.#connection.run((redis) =>
        ACQUIRE.run(redis, [key], [id, now, now + this.#options.slotTtlMs, this.limit]),
      );
    } catch {
      return this.#options.fallback.acquireNow(principal);
    }
    if (granted !== 1) return null;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        // A release that cannot reach Redis is not retried: the slot expires on its own, and
        // the outage is the breaker's and the outage log's to report, not each upload's.
        this.#connection.run((redis) => redis.zrem(key, id)).catch(() => {});
      },
    };
  }
}
