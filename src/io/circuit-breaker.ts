/**
 * A circuit breaker in front of a dependency that can stall (issue 34, finding 4): Redis
 * (src/redis/breaker.ts) and PostgreSQL (src/storage/pg-document-store.ts). A stalled server
 * (SIGSTOP, a hung network) closes no connection: each call just waits for its timeout.
 * Without a memory of that, every request paid the timeout again (p50 1,006 ms during a 20 s
 * Redis stall). So the first call that is not answered (a timeout, a connection gone) opens
 * the circuit: later calls fail at once, in microseconds, with the dependency's own
 * "unavailable" error, which its callers already handle (a 503, a fallback), having sent
 * nothing. Meanwhile one probe runs in the background after a short interval that doubles on
 * each failed probe, up to a ceiling; the first probe answered closes the circuit. No request
 * is ever the probe, so none pays the timeout while the circuit is open.
 */

export type CircuitState = "closed" | "open";

/** Where the breaker says it opened and closed: state changes only, never content. */
export interface BreakerLog {
  warn(message: string): void;
  info(message: string): void;
}

export interface BreakerTiming {
  /** The first interval before a probe, in ms (default 250). */
  firstIntervalMs?: number;
  /** The longest interval between probes, in ms (default 5,000). */
  maxIntervalMs?: number;
  /** A monotonic clock (default `performance.now`). */
  now?: () => number;
  /** Told once when the circuit opens (if `opened` has words for it) and once when it closes. */
  log?: BreakerLog;
}

/** What makes one breaker the Redis one or the PostgreSQL one. */
export interface BreakerPolicy {
  /** Whether `error` means the dependency did not answer (opens the circuit). */
  isUnanswered(error: unknown): boolean;
  /** What a call refused while the circuit is open throws. */
  openError(retryInMs: number): Error;
  /**
   * The warning for an opening caused by `error`, or null when someone else says it (Redis:
   * a lost connection is the outage log's to report).
   */
  opened(error: unknown): string | null;
  /** The line once it closes again (written only if the opening was). */
  closed: string;
}

export class CircuitBreaker {
  readonly #policy: BreakerPolicy;
  readonly #firstIntervalMs: number;
  readonly #maxIntervalMs: number;
  readonly #now: () => number;
  readonly #log: BreakerLog;
  /** Answers true when the dependency answered a probe within its timeout. */
  #probe: (() => Promise<boolean>) | null = null;
  #openUntil: number | null = null;
  #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;
  #trips = 0;
  /** Whether this opening was logged; its closing is logged only if so. */
  #logged = false;

  constructor(policy: BreakerPolicy, timing: BreakerTiming = {}) {
    this.#policy = policy;
    this.#firstIntervalMs = timing.firstIntervalMs ?? 250;
    this.#maxIntervalMs = timing.maxIntervalMs ?? 5_000;
    this.#intervalMs = this.#firstIntervalMs;
    this.#now = timing.now ?? (() => performance.now());
    this.#log = timing.log ?? { warn() {}, info() {} };
  }

  get state(): CircuitState {
    return this.#openUntil === null ? "closed" : "open";
  }

  /** How many times the circuit has opened since the process started (a metric). */
  get trips(): number {
    return this.#trips;
  }

  /** The check that closes the circuit; the first one offered is kept. */
  useProbe(probe: () => Promise<boolean>): void {
    this.#probe ??= probe;
  }

  /**
   * Runs `call` unless the circuit is open (then rejects with the policy's open error without
   * running it). An unanswered call opens the circuit; its error is rethrown.
   */
  async run<T>(call: () => Promise<T>): Promise<T> {
    this.assertClosed();
    try {
      return await call();
    } catch (error) {
      if (this.#policy.isUnanswered(error)) this.trip(error);
      throw error;
    }
  }

  /** Throws the policy's open error while the circuit is open; for callers that send later. */
  assertClosed(): void {
    if (this.#openUntil === null) return;
    throw this.#policy.openError(Math.max(0, this.#openUntil - this.#now()));
  }

  /** Opens the circuit after `error` (a call not answered). Idempotent while open. */
  trip(error: unknown): void {
    if (this.#openUntil !== null) return;
    this.#trips += 1;
    this.#intervalMs = this.#firstIntervalMs;
    this.#openUntil = this.#now() + this.#intervalMs;
    const warning = this.#policy.opened(error);
    this.#logged = warning !== null;
    if (warning !== null) this.#log.warn(warning);
    this.#schedule();
  }

  #schedule(): void {
    this.#timer = setTimeout(() => void this.#check(), this.#intervalMs);
    this.#timer.unref();
  }

  async #check(): Promise<void> {
    this.#timer = null;
    if (this.#openUntil === null) return;
    const answered = this.#probe === null ? true : await this.#probe().catch(() => false);
    if (this.#openUntil === null) return;
    if (answered) {
      this.#close();
      return;
    }
    this.#intervalMs = Math.min(this.#intervalMs * 2, this.#maxIntervalMs);
    this.#openUntil = this.#now() + this.#intervalMs;
    this.#schedule();
  }

  #close(): void {
    this.#openUntil = null;
    if (this.#logged) this.#log.info(this.#policy.closed);
  }

  /** Closes the circuit now: a connection has just (re)connected, which answers any probe. */
  connected(): void {
    if (this.#openUntil === null) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#close();
  }

  /** Stops the probe timer (the process is closing). */
  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
