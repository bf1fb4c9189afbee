/**
 * Distributed mode's `Idempotency-Key` entries: one Redis key per entry,
 * `<prefix>idempotency:{<entry>}`, claimed with a Lua script (read, or claim when absent) so that two
 * instances never both run one key, answered with a 24 h expiry. Errors propagate: the plugin
 * refuses (503) rather than run a retry it cannot tell from a first request.
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

// KEYS[1] the entry; ARGV[1] the claim that must still be there; ARGV[2] the answer (or ''
// to drop the claim); ARGV[3] the answer's lifetime (ms).
const SETTLE = new LuaScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
`);

export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #connection: RedisConnection;

  /** Uses `connection` without owning it: `close()` leaves it open for the other stores. */
  constructor(connection: RedisConnection) {
    this.#connection = connection;
  }

  key(entry: string): string {
    return taggedKey(this.#connection.prefix, "idempotency", entry);
  }

  async begin(entry: string, fingerprint: string): Promise<IdempotencyBegin> {
    const claim = newClaim(fingerprint);
    const held = await this.#connection.run((client) =>
      BEGIN.run(client, [this.key(entry)], [claim, IDEMPOTENCY_CLAIM_MS]),
    );
    if (typeof held === "string") return decodeEntry(held);
    return { state: "claimed", claim };
  }

  async complete(
    entry: string,
    claim: string,
    fingerprint: string,
    answer: StoredAnswer,
  ): Promise<void> {
    await this.#settle(entry, claim, encodeAnswer(fingerprint, answer));
  }

  async release(entry: string, claim: string): Promise<void> {
    await this.#settle(entry, claim, "");
  }

  async #settle(entry: string, claim: string, answer: string): Promise<void> {
    await this.#connection.run((client) =>
      SETTLE.run(client, [this.key(entry)], [claim, answer, IDEMPOTENCY_TTL_MS]),
    );
  }

  async close(): Promise<void> {}
}
