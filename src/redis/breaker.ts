/**
 * A circuit breaker in front of every Redis command of a process (issue 34, finding 4). A
 * stalled Redis (SIGSTOP, a hung network) closes no connection: each command just waits for
 * its timeout. Without a memory of that, every request paid the timeout again (p50 1,006 ms
 * during a 20 s stall). So the first command that times out, or finds the connection gone,
 * opens the circuit: later commands fail at once, in microseconds, with
 * `RedisCircuitOpenError`, which the stores' callers already treat as "Redis unreachable"
 * (the caps count in memory, the writes answer 503, having sent nothing). Meanwhile one probe
 * (a PING with its own timeout) runs in the background after a short interval that doubles on
 * each failed probe, up to a ceiling; the first probe answered closes the circuit. No request
 * is ever the probe, so none pays the timeout while the circuit is open.
 */
import { CodedError } from "../verifier/coded-error.js";

/** What opens the circuit: Redis did not answer, as opposed to refusing a command. */
export function isUnansweredCommand(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof RedisCircuitOpenError) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true;
  return /Command timed out|Connection is closed|connect ETIMEDOUT|Stream isn't writeable|MaxRetriesPerRequest|took over \d+ ms/.test(
    error.message,
  );
}

export type RedisCircuitOpenErrorCode = "redis_circuit_open";
/**
 * Refused without being sent: the circuit is open. Nothing reached Redis. Callers treat it as
 * Redis unreachable (`isConnectionError`, outages.ts), never as a command Redis refused.
 */
export class RedisCircuitOpenError extends CodedError<RedisCircuitOpenErrorCode> {
  override readonly name = "RedisCircuitOpenError";
  constructor(readonly retryInMs: number) {
    super(
      "redis_circuit_open",
      `redis did not answer recently; not sent (next check in ${Math.ceil(retryInMs)} ms)`,
    );
  }
}

export type CircuitState = "closed" | "open";

export interface RedisBreakerOptions {
  /** The first interval before a probe, in ms (default 250). */
  firstIntervalMs?: number;
  /** The longest interval between probes, in ms (default 5,000). */
  maxIntervalMs?: number;
  /** A monotonic clock (default `performance.now`). */
  now?: () => number;
  /** Told once when the circuit opens and once when it closes. */
  log?: { warn(message: string): void; info(message: string): void };
}

export class RedisBreaker {
  readonly #firstIntervalMs: number;
  readonly #maxIntervalMs: number;
  readonly #now: () => number;
  readonly #log: { warn(message: string): void; info(message: string): void };
  /** Answers true when Redis answered a PING within its timeout. Set by the connection. */
  #probe: (() => Promise<boolean>) | null = null;
  #openUntil: number | null = null;
  #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;
  #trips = 0;
  /** Whether this opening was logged (a stall); a lost connection is the outage log's to say. */
  #logged = false;

  constructor(options: RedisBreakerOptions = {}) {
    this.#firstIntervalMs = options.firstIntervalMs ?? 250;
    this.#maxIntervalMs = options.maxIntervalMs ?? 5_000;
    this.#intervalMs = this.#firstIntervalMs;
    this.#now = options.now ?? (() => performance.now());
    this.#log = options.log ?? { warn() {}, info() {} };
  }

  get state(): CircuitState {
    return this.#openUntil === null ? "closed" : "open";
  }

  /** How many times the circuit has opened since the process started (a metric). */
  get trips(): number {
    return this.#trips;
  }

  /** The check that closes the circuit; the first connection to offer one keeps it. */
  useProbe(probe: () => Promise<boolean>): void {
    this.#probe ??= probe;
  }

  /**
   * Runs `command` unless the circuit is open (then rejects with `RedisCircuitOpenError`
   * without running it). An unanswered command opens the circuit; its error is rethrown.
   */
  async run<T>(command: () => Promise<T>): Promise<T> {
    this.assertClosed();
    try {
      return await command();
    } catch (error) {
      if (isUnansweredCommand(error)) this.trip(error);
      throw error;
    }
  }

  /** Throws `RedisCircuitOpenError` while the circuit is open; for callers that send later. */
  assertClosed(): void {
    if (this.#openUntil === null) return;
    throw new RedisCircuitOpenError(Math.max(0, this.#openUntil - this.#now()));
  }

  /** Opens the circuit after `error` (a command Redis did not answer). Idempotent while open. */
  trip(error: unknown): void {
    if (this.#openUntil !== null) return;
    this.#trips += 1;
    this.#intervalMs = this.#firstIntervalMs;
    this.#openUntil = this.#now() + this.#intervalMs;
    // A refused or dropped connection is logged once by the outage log (outages.ts); a stall
    // closes no connection, so only this can say it.
    this.#logged = error instanceof Error && /timed out|took over/.test(error.message);
    if (this.#logged) {
      this.#log.warn("redis did not answer within the command timeout; failing fast until it does");
    }
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
      this.#openUntil = null;
      if (this.#logged) this.#log.info("redis answers again; commands are sent again");
      return;
    }
    this.#intervalMs = Math.min(this.#intervalMs * 2, this.#maxIntervalMs);
    this.#openUntil = this.#now() + this.#intervalMs;
    this.#schedule();
  }

  /** Closes the circuit now: a connection has just (re)connected, which answers any probe. */
  connected(): void {
    if (this.#openUntil === null) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#openUntil = null;
    if (this.#logged) this.#log.info("redis answers again; commands are sent again");
  }

  /** Stops the probe timer (the process is closing). */
  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
