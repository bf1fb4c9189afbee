/**
 * The bound of a distributed queue (issue 34, finding 3): each queue holds at most a budget of
 * payload bytes in Redis, and one principal's jobs at most a share of it, across every web
 * process. A submission is admitted before its add, atomically (one Lua script checks the
 * queue's total and the principal's bytes, then charges both), so a refusal leaves nothing in
 * Redis and other principals keep their share.
 *
 * Two keys per queue, in one hash slot (the `{queue}` tag, shared with the queue's BullMQ keys:
 * src/redis/keys.ts), under the deployment's prefix:
 * - `<prefix>:budget:{<queue>}:bytes`, a hash: `total` and `p:<principal>`, in bytes;
 * - `<prefix>:budget:{<queue>}:jobs`, a hash: job id → `<bytes>|<admitted ms>|<principal>`,
 *   the ledger that makes a release happen once per admission, whoever releases it.
 *
 * Bytes are released when the job completes or fails for good (the worker), when its add
 * certainly did not reach Redis (the producer), and by the reconciler (`receiptd worker`, at
 * start and every minute): an entry whose job is gone or finished is released, so a process
 * killed between a job's end and its release cannot leak budget for longer than that.
 */
import type { RedisClient } from "../src/redis/client.js";
import { bullmqPrefix, taggedKey } from "../src/redis/keys.js";
import { QueueClosedError } from "./job-queue.js";

export interface QueueBudgetLimits {
  /** `QUEUE_BUDGET_BYTES`. */
  budgetBytes: number;
  /** `QUEUE_SHARE_PERCENT`. */
  sharePercent: number;
}

/** Which bound refused: the principal's share, or the queue's whole budget. */
export type QueueFullBound = "share" | "budget";

/**
 * The queue is over its budget, or the principal over its share: nothing was enqueued. A kind
 * of `QueueClosedError` (not now, nothing done, retry) that the routes answer `503 queue_full`.
 */
export class QueueFullError extends QueueClosedError {
  override readonly name = "QueueFullError";
  constructor(
    readonly queue: string,
    readonly bound: QueueFullBound,
    /** Bytes held by the principal (`share`) or the whole queue (`budget`). */
    readonly heldBytes: number,
    readonly limitBytes: number,
    readonly jobBytes: number,
  ) {
    const whose = bound === "share" ? "this principal's queued jobs" : `the ${queue} queue`;
    super(`${whose} hold ${heldBytes} bytes; this job would add ${jobBytes} of ${limitBytes}`);
  }
}

/** Seconds a refused client is told to wait: a backlog drains at the workers' pace. */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 5;

/**
 * An admission not yet matched by a job is kept this long by the reconciler: the add follows
 * the admission, and may be slowed by a stalled Redis up to the producer's command timeout.
 */
export const ADMISSION_GRACE_MS = 60_000;

export function queueBudgetKeys(prefix: string, queue: string): { bytes: string; jobs: string } {
  return {
    bytes: taggedKey(prefix, "budget", queue, "bytes"),
    jobs: taggedKey(prefix, "budget", queue, "jobs"),
  };
}

/** The principal under which jobs the service itself submits are counted (never refused). */
export const SERVICE_PRINCIPAL = "service";

// KEYS: bytes hash, jobs ledger. ARGV: job id, principal, bytes, budget, share, now ms,
// enforce (1) or count only (0). A job id already in the ledger is held by its first
// admission: a duplicate add joins that job and is not charged again.
const ADMIT = `
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {'held', 0} end
local bytes = tonumber(ARGV[3])
local total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
local field = 'p:' .. ARGV[2]
local mine = tonumber(redis.call('HGET', KEYS[1], field) or '0')
if ARGV[7] == '1' then
  if mine + bytes > tonumber(ARGV[5]) then return {'share', mine} end
  if total + bytes > tonumber(ARGV[4]) then return {'budget', total} end
end
redis.call('HINCRBY', KEYS[1], 'total', bytes)
redis.call('HINCRBY', KEYS[1], field, bytes)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3] .. '|' .. ARGV[6] .. '|' .. ARGV[2])
return {'admitted', total + bytes}
`;

// KEYS: bytes hash, jobs ledger. ARGV: job id. Returns the bytes released (0: none held).
const RELEASE = `
local entry = redis.call('HGET', KEYS[2], ARGV[1])
if not entry then return 0 end
local bytes, _, principal = string.match(entry, '^(%d+)|(%d+)|(.*)$')
redis.call('HDEL', KEYS[2], ARGV[1])
if not bytes then return 0 end
local field = 'p:' .. principal
if redis.call('HINCRBY', KEYS[1], field, -tonumber(bytes)) <= 0 then redis.call('HDEL', KEYS[1], field) end
if redis.call('HINCRBY', KEYS[1], 'total', -tonumber(bytes)) <= 0 then redis.call('HDEL', KEYS[1], 'total') end
return tonumber(bytes)
`;

// KEYS: bytes hash, jobs ledger. Sets the counters to the ledger's sums, whatever they were.
const RECOUNT = `
local entries = redis.call('HVALS', KEYS[2])
local sums = {}
local total = 0
for _, entry in ipairs(entries) do
  local bytes, _, principal = string.match(entry, '^(%d+)|(%d+)|(.*)$')
  if bytes then
    local field = 'p:' .. principal
    sums[field] = (sums[field] or 0) + tonumber(bytes)
    total = total + tonumber(bytes)
  end
end
redis.call('DEL', KEYS[1])
if total > 0 then
  redis.call('HSET', KEYS[1], 'total', total)
  for field, sum in pairs(sums) do redis.call('HSET', KEYS[1], field, sum) end
end
return total
`;

export type Admission = "admitted" | "held";

export interface BudgetLedgerEntry {
  jobId: string;
  bytes: number;
  admittedAtMs: number;
  principal: string;
}

/** One queue's budget in Redis, on a connection the caller owns. */
export class QueueBudget {
  readonly #keys: { bytes: string; jobs: string };

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    readonly queue: string,
    private readonly limits: QueueBudgetLimits = { budgetBytes: Infinity, sharePercent: 100 },
  ) {
    this.#keys = queueBudgetKeys(prefix, queue);
  }

  /** The principal's share in bytes. */
  get shareBytes(): number {
    const { budgetBytes, sharePercent } = this.limits;
    return Math.floor((budgetBytes * sharePercent) / 100);
  }

  /**
   * Charges `bytes` of job `jobId` to `principal`, or throws `QueueFullError` (nothing
   * charged). `enforce: false` counts without refusing: jobs the service owes its clients (a
   * paid call's receipt) are never refused, but they fill the budget like any other.
   */
  async admit(
    jobId: string,
    principal: string,
    bytes: number,
    enforce = true,
    now = Date.now(),
  ): Promise<Admission> {
    const budget = Number.isFinite(this.limits.budgetBytes) ? this.limits.budgetBytes : -1;
    const [verdict, held] = (await this.client.eval(
      ADMIT,
      2,
      this.#keys.bytes,
      this.#keys.jobs,
      jobId,
      principal,
      bytes,
      budget,
      budget < 0 ? -1 : this.shareBytes,
      now,
      enforce && budget >= 0 ? 1 : 0,
    )) as [string, number];
    if (verdict === "admitted" || verdict === "held") return verdict;
    const bound: QueueFullBound = verdict === "share" ? "share" : "budget";
    const limit = bound === "share" ? this.shareBytes : this.limits.budgetBytes;
    throw new QueueFullError(this.queue, bound, Number(held), limit, bytes);
  }

  /** Gives back what job `jobId` was charged, once; returns the bytes released. */
  async release(jobId: string): Promise<number> {
    return Number(await this.client.eval(RELEASE, 2, this.#keys.bytes, this.#keys.jobs, jobId));
  }

  /** Bytes the queue holds now, by its counter. */
  async heldBytes(): Promise<number> {
    return Number((await this.client.hget(this.#keys.bytes, "total")) ?? 0);
  }

  /** Bytes `principal`'s jobs hold now. */
  async principalBytes(principal: string): Promise<number> {
    return Number((await this.client.hget(this.#keys.bytes, `p:${principal}`)) ?? 0);
  }

  async ledger(): Promise<BudgetLedgerEntry[]> {
    const entries = await this.client.hgetall(this.#keys.jobs);
    return Object.entries(entries).flatMap(([jobId, value]) => {
      const match = /^(\d+)\|(\d+)\|(.*)$/s.exec(value);
      if (match === null) return [];
      const [, bytes, admittedAtMs, principal] = match;
      return [{ jobId, bytes: Number(bytes), admittedAtMs: Number(admittedAtMs), principal }];
    }) as BudgetLedgerEntry[];
  }

  /**
   * Releases every entry whose job `isLive` denies (gone, or finished) once its admission is
   * older than `ADMISSION_GRACE_MS`, then sets the counters to what the ledger holds. Returns
   * the bytes released.
   */
  async reconcile(isLive: (jobId: string) => Promise<boolean>, now = Date.now()): Promise<number> {
    let released = 0;
    for (const entry of await this.ledger()) {
      if (now - entry.admittedAtMs < ADMISSION_GRACE_MS) continue;
      if (!(await isLive(entry.jobId))) released += await this.release(entry.jobId);
    }
    await this.client.eval(RECOUNT, 2, this.#keys.bytes, this.#keys.jobs);
    return released;
  }
}

/**
 * Whether BullMQ job `jobId` of `queue` still waits or runs: its hash exists and has no
 * `finishedOn` (a completed job kept by retention has one; a removed job has no hash).
 */
export async function bullmqJobIsLive(
  client: RedisClient,
  prefix: string,
  queue: string,
  jobId: string,
): Promise<boolean> {
  const [timestamp, finishedOn] = await client.hmget(
    `${bullmqPrefix(prefix, queue)}:${queue}:${jobId}`,
    "timestamp",
    "finishedOn",
  );
  return timestamp !== null && finishedOn === null;
}
