/**
 * The distributed cap store: one counter per bucket per UTC day in Redis, shared by every
 * instance. Each request is one Lua script (GET, compare, INCR, expire), so instances never
 * over-admit between them; the decision and headers come from `decide()`, exactly as in the
 * memory store.
 */
import {
  type CapDecision,
  type CapStore,
  checkLimit,
  DAY_MS,
  decide,
  utcDay,
} from "../access/caps.js";
import { LuaScript, type RedisConnection } from "./connection.js";
import { taggedKey } from "./keys.js";

/**
 * A counter is kept this long past its day's midnight. Its key names the day, so an instance
 * whose clock lags a little still finds (and respects) the count of the day it thinks it is.
 */
export const CAP_KEY_GRACE_MS = 3_600_000;

// KEYS[1] the counter; ARGV[1] the cap; ARGV[2] milliseconds the counter lives from now.
// The expiry is relative and computed from the caller's instant, so it does not depend on
// Redis's clock agreeing with ours.
const CONSUME = new LuaScript(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count < tonumber(ARGV[1]) then
  redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return count
`);

// KEYS[1] the counter. A counter that is gone (expired, another day) is left alone, and one
// at 0 is not taken below it; the expiry set by CONSUME stays as it is.
const REFUND = new LuaScript(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 0 then
  redis.call('DECR', KEYS[1])
end
return count
`);

export class RedisCapStore implements CapStore {
  readonly #connection: RedisConnection;
  readonly #now: () => number;

  /** Uses `connection` without owning it: `close()` leaves it open for the other stores. */
  constructor(connection: RedisConnection, now: () => number = Date.now) {
    this.#connection = connection;
    this.#now = now;
  }

  /** The counter of `bucket` for the UTC day of `nowMs`: its own hash tag (keys.ts). */
  key(bucket: string, nowMs: number): string {
    return taggedKey(this.#connection.prefix, "cap", `${bucket}:${utcDay(nowMs)}`);
  }

  async consume(bucket: string, limit: number, nowMs: number = this.#now()): Promise<CapDecision> {
    checkLimit(limit);
    const keepMs = (utcDay(nowMs) + 1) * DAY_MS - nowMs + CAP_KEY_GRACE_MS;
    const before = await this.#connection.run((client) =>
      CONSUME.run(client, [this.key(bucket, nowMs)], [limit, keepMs]),
    );
    if (typeof before !== "number") throw new Error("unexpected answer from the cap script");
    return decide(before, limit, nowMs);
  }

  async refund(bucket: string, nowMs: number): Promise<void> {
    await this.#connection.run((client) => REFUND.run(client, [this.key(bucket, nowMs)], []));
  }

  async count(bucket: string, nowMs: number): Promise<number> {
    const text = await this.#connection.run((client) => client.get(this.key(bucket, nowMs)));
    const count = text === null ? 0 : Number(text);
    if (!Number.isSafeInteger(count)) throw new Error("unexpected value of a cap counter");
    return count;
  }

  async close(): Promise<void> {}
}
