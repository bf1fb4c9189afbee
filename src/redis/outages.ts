/**
 * One log line when Redis becomes unreachable, with its cause, and one when it is back, per
 * process — however many connections it holds. A process has several (the shared connection,
 * each BullMQ queue's and worker's, their blocking duplicates), and ioredis reports every
 * failed reconnect attempt on every one of them: unwatched, an unreachable Redis wrote about a
 * hundred `queue connection error: Error` lines in seven seconds and never said why.
 *
 * Connections are watched: the outage starts with the first one that fails and ends when every
 * watched connection that failed is ready again. Errors seen elsewhere (BullMQ's own duplicated
 * connections surface on its `error` events) can start an outage but never end one.
 */
import type { EventEmitter } from "node:events";
import { RedisBreaker, RedisCircuitOpenError } from "./breaker.js";

/** What an outage writes: state changes only, never keys, values or the URL. */
export interface RedisLog {
  warn(message: string): void;
  info(message: string): void;
}

/**
 * A content-free cause: the socket error code (`ECONNREFUSED`), else the error's class, else
 * its message when the class says nothing (`Error: Connection is closed.`). Never the URL.
 */
export function outageCause(error: unknown): string {
  if (!(error instanceof Error)) return "unknown";
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === "string") return code;
  if (error.name !== "Error") return error.name;
  return error.message.slice(0, 120) || "Error";
}

/** Errors that say Redis cannot be reached, as opposed to a command Redis refused. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof RedisCircuitOpenError) return true;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true;
  return /Connection is closed|connect ETIMEDOUT|Stream isn't writeable|MaxRetriesPerRequest/.test(
    error.message,
  );
}

export class RedisOutages {
  /**
   * The process's one circuit breaker (breaker.ts): every Redis command of the process, the
   * stores' and the queue producers', goes through it, so one stall is paid once, not once
   * per request or per connection.
   */
  readonly breaker: RedisBreaker;
  readonly #log: RedisLog;
  readonly #down = new Set<string>();
  #outage = false;
  #nextId = 0;

  constructor(log: RedisLog) {
    this.#log = log;
    this.breaker = new RedisBreaker({ log });
  }

  get down(): boolean {
    return this.#outage;
  }

  /**
   * Follows one connection's `error`, `close`, `ready` and `end` events. Returns a function
   * to call before closing it on purpose, so that the close is not taken for an outage.
   */
  watch(connection: EventEmitter, name = `connection-${this.#nextId++}`): () => void {
    let released = false;
    const onError = (error: unknown) => {
      if (!released) this.#fail(name, outageCause(error));
    };
    // A dropped connection may close without any error.
    const onClose = () => {
      if (!released) this.#fail(name, "connection closed");
    };
    const onReady = () => this.#recover(name);
    const release = () => {
      released = true;
      connection.off("error", onError);
      connection.off("close", onClose);
      connection.off("ready", onReady);
      this.#down.delete(name);
    };
    connection.on("error", onError);
    connection.on("close", onClose);
    connection.on("ready", onReady);
    // No more reconnects: whatever happened to it, it no longer holds an outage open.
    connection.once("end", release);
    return release;
  }

  /**
   * An error from a connection this monitor does not watch. Returns true when it is a
   * connection error (now part of the outage, logged at most once), false when the caller
   * should report it as the error it is.
   */
  report(error: unknown): boolean {
    if (!isConnectionError(error) && !this.#outage) return false;
    this.#start(outageCause(error));
    return true;
  }

  #fail(name: string, cause: string): void {
    this.#down.add(name);
    this.#start(cause);
  }

  #start(cause: string): void {
    if (this.#outage) return;
    this.#outage = true;
    this.#log.warn(`redis unavailable (${cause}); retrying in the background`);
  }

  #recover(name: string): void {
    this.#down.delete(name);
    if (!this.#outage || this.#down.size > 0) return;
    this.#outage = false;
    this.#log.info("redis available again");
  }
}
