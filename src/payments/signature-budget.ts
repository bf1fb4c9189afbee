/**
 * How often x402 payments may make this process recover a signature (issue 22, finding 7).
 * Recovery (EIP-712 hashing and ecrecover, about 2 ms) runs on the main thread before anyone
 * has paid anything, so a client sending well-formed payments with wrong signers could keep
 * the thread busy for free. Every payment that passed the cheap checks takes one token from
 * its client's bucket (an IPv4 address, an IPv6 /64) and one from the process's; a client out
 * of tokens is refused without any signature work, and one client's flood leaves the others
 * their share.
 *
 * The process's share is in process memory: it bounds this process's CPU, so it is per
 * instance by design. A client's share is meant for the client across the deployment (issue
 * 34, finding 6: one address had 42 signatures checked over two webs where one allows 20), so
 * distributed mode keeps it in Redis (`RedisSignatureChecks`, src/redis) and uses the bucket
 * here only while Redis cannot answer. Both sit behind `SignatureChecks`. Clients are named by
 * the caller (a keyed hash of the address), so no address is held here.
 */

/** Takes one signature check for a client, from its share and the process's, or refuses. */
export interface SignatureChecks {
  take(client: string): Promise<SignatureBudgetDecision>;
}

/** Embedded mode: both shares in this process (`SignatureBudget`). */
export class InProcessSignatureChecks implements SignatureChecks {
  constructor(readonly budget: SignatureBudget) {}

  async take(client: string): Promise<SignatureBudgetDecision> {
    return this.budget.take(client);
  }
}

export interface SignatureBudgetOptions {
  /** Recoveries per second one client may sustain; it may burst to twice as many. */
  perClientPerSecond: number;
  /** Recoveries per second for the whole process; it may burst to one second's worth. */
  totalPerSecond: number;
  /**
   * A clock in milliseconds (default `performance.now`). A wall clock does too: time going
   * backwards refills nothing, it only delays the next refill.
   */
  now?: () => number;
  /** Clients tracked before idle ones are forgotten (default 10,000). */
  maxClients?: number;
}

/** `granted`, or which share refused: the client's own or the process's. */
export type SignatureBudgetDecision = "granted" | "client" | "total";

interface Bucket {
  tokens: number;
  at: number;
}

/** Clients beyond `maxClients` that are all still active share this bucket. */
const OVERFLOW = "\u0000overflow";

export class SignatureBudget {
  readonly #perClient: number;
  readonly #clientBurst: number;
  readonly #total: number;
  readonly #now: () => number;
  readonly #maxClients: number;
  readonly #clients = new Map<string, Bucket>();
  readonly #process: Bucket;

  constructor(options: SignatureBudgetOptions) {
    for (const [name, rate] of [
      ["perClientPerSecond", options.perClientPerSecond],
      ["totalPerSecond", options.totalPerSecond],
    ] as const) {
      if (!Number.isFinite(rate) || rate <= 0) {
        throw new RangeError(`${name} is a positive rate, got ${rate}`);
      }
    }
    this.#perClient = options.perClientPerSecond;
    this.#clientBurst = 2 * options.perClientPerSecond;
    this.#total = options.totalPerSecond;
    this.#now = options.now ?? (() => performance.now());
    this.#maxClients = options.maxClients ?? 10_000;
    this.#process = { tokens: this.#total, at: this.#now() };
  }

  /** Takes one recovery for `client`, from its share and the process's, or refuses. */
  take(client: string): SignatureBudgetDecision {
    const now = this.#now();
    const bucket = this.#bucketOf(client, now);
    refill(bucket, now, this.#perClient, this.#clientBurst);
    if (bucket.tokens < 1) return "client";
    refill(this.#process, now, this.#total, this.#total);
    if (this.#process.tokens < 1) return "total";
    bucket.tokens -= 1;
    this.#process.tokens -= 1;
    return "granted";
  }

  /**
   * Takes one check from the process's share alone (a shared client share is checked
   * elsewhere); false when it has none left.
   */
  takeProcess(): boolean {
    refill(this.#process, this.#now(), this.#total, this.#total);
    if (this.#process.tokens < 1) return false;
    this.#process.tokens -= 1;
    return true;
  }

  /** Gives back a check `takeProcess` took for a call that was refused elsewhere. */
  giveBackProcess(): void {
    this.#process.tokens = Math.min(this.#total, this.#process.tokens + 1);
  }

  /** The per-client rate and burst, for a shared bucket that must match this one. */
  get perClient(): { perSecond: number; burst: number } {
    return { perSecond: this.#perClient, burst: this.#clientBurst };
  }

  /** Clients currently tracked (tests check that idle ones are forgotten). */
  get size(): number {
    return this.#clients.size;
  }

  #bucketOf(client: string, now: number): Bucket {
    let bucket = this.#clients.get(client);
    if (bucket !== undefined) return bucket;
    if (this.#clients.size >= this.#maxClients) this.#forgetIdle(now);
    const key = this.#clients.size >= this.#maxClients ? OVERFLOW : client;
    bucket = this.#clients.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.#clientBurst, at: now };
      this.#clients.set(key, bucket);
    }
    return bucket;
  }

  /** A client whose bucket has refilled is indistinguishable from a new one: drop it. */
  #forgetIdle(now: number): void {
    for (const [client, bucket] of this.#clients) {
      refill(bucket, now, this.#perClient, this.#clientBurst);
      if (bucket.tokens >= this.#clientBurst) this.#clients.delete(client);
    }
  }
}

function refill(bucket: Bucket, now: number, perSecond: number, burst: number): void {
  const elapsed = Math.max(0, now - bucket.at);
  bucket.tokens = Math.min(burst, bucket.tokens + (elapsed * perSecond) / 1000);
  bucket.at = now;
}
