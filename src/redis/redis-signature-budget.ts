/**
 * The x402 signature share of a client address across the deployment (issue 34, finding 6):
 * one token bucket per address in Redis, so that N web processes give an address one share,
 * not N (one address had 42 signatures checked over two webs where one allows 20). The
 * process's own share stays in the process (`SignatureBudget`): it bounds this process's CPU.
 *
 * Cost and failure: one EVALSHA per payment that passed the cheap checks (decode, offer,
 * amount, window, signature form), so a malformed payment still costs Redis nothing. Redis is
 * asked only when the process's share has a check left, so an overloaded process refuses
 * without a round trip. While Redis cannot answer (the process's circuit breaker is open, or
 * any error) the client's share is taken from the process's own bucket instead: failing open
 * to a per-process bound, never to none, since a refused payment would cost the client its
 * call and a granted one costs at most one recovery per token.
 */
import type {
  SignatureBudget,
  SignatureBudgetDecision,
  SignatureChecks,
} from "../payments/signature-budget.js";
import { LuaScript, type RedisConnection } from "./connection.js";
import { taggedKey } from "./keys.js";

// KEYS[1] the client's bucket (a hash: t = tokens, a = the instant they were counted at).
// ARGV[1] the caller's instant (ms), ARGV[2] tokens per second, ARGV[3] the burst.
// The caller's clock, as for the caps (redis-cap-store.ts), so a frozen test clock works; a
// web whose clock lags refills nothing until its clock passes the stored instant (never
// backwards), so skew between webs never adds tokens. The bucket expires once it would be
// full again: a full bucket and no bucket are the same.
const TAKE = new LuaScript(`
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local held = redis.call('HMGET', KEYS[1], 't', 'a')
local tokens = tonumber(held[1])
local at = tonumber(held[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000)
  at = now
end
if tokens < 1 then
  return 0
end
tokens = tokens - 1
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'a', tostring(at))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
return 1
`);

export class RedisSignatureChecks implements SignatureChecks {
  readonly #connection: RedisConnection;
  readonly #local: SignatureBudget;
  readonly #now: () => number;

  /**
   * `local` holds the process's share, and the client shares used while Redis cannot answer;
   * its per-client rate and burst are the shared bucket's too.
   */
  constructor(connection: RedisConnection, local: SignatureBudget, now: () => number = Date.now) {
    this.#connection = connection;
    this.#local = local;
    this.#now = now;
  }

  /**
   * The bucket of `client` (already a keyed hash of the address). The hash tag keeps each
   * script on one slot of a Redis Cluster.
   */
  key(client: string): string {
    return taggedKey(this.#connection.prefix, "sigbudget", client);
  }

  async take(client: string): Promise<SignatureBudgetDecision> {
    if (!this.#local.takeProcess()) return "total";
    const { perSecond, burst } = this.#local.perClient;
    let granted: unknown;
    try {
      granted = await this.#connection.run((redis) =>
        TAKE.run(redis, [this.key(client)], [this.#now(), perSecond, burst]),
      );
    } catch {
      // Fail open to this process's bucket for the client (see above).
      this.#local.giveBackProcess();
      return this.#local.take(client);
    }
    if (granted === 1) return "granted";
    this.#local.giveBackProcess();
    return "client";
  }
}
