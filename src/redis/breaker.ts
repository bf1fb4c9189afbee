/**
 * The process's circuit breaker in front of every Redis command (issue 34, finding 4): the
 * shared breaker (src/io/circuit-breaker.ts) with Redis's policy. The first command that times
 * out, or finds the connection gone, opens it; later commands fail at once with
 * `RedisCircuitOpenError`, which the stores' callers already treat as "Redis unreachable"
 * (the caps count in memory, the writes answer 503, having sent nothing), until a background
 * PING is answered or a connection becomes ready again.
 */
import { type BreakerTiming, CircuitBreaker } from "../io/circuit-breaker.js";
import { CodedError } from "../verifier/coded-error.js";

export type { CircuitState } from "../io/circuit-breaker.js";

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

export type RedisBreakerOptions = BreakerTiming;

export class RedisBreaker extends CircuitBreaker {
  constructor(options: RedisBreakerOptions = {}) {
    super(
      {
        isUnanswered: isUnansweredCommand,
        openError: (retryInMs) => new RedisCircuitOpenError(retryInMs),
        // A refused or dropped connection is logged once by the outage log (outages.ts); a
        // stall closes no connection, so only the breaker can say it.
        opened: (error) =>
          error instanceof Error && /timed out|took over/.test(error.message)
            ? "redis did not answer within the command timeout; failing fast until it does"
            : null,
        closed: "redis answers again; commands are sent again",
      },
      options,
    );
  }
}
