/**
 * Content-free logging (service.md §9): one line per request with the method, the route
 * template, the status, the latency and the request id. Never bodies, query strings,
 * headers or client addresses: URLs are never logged because a query string can carry
 * anything, and the serializers below replace pino's defaults, which would log the URL,
 * the host and the remote address.
 */
import {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import fastifyPlugin from "fastify-plugin";
import { destination } from "pino";
import type { LogDestination, ServiceConfig } from "../config.js";
import { guardAnswerStatus } from "../http/connections.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";

interface LoggedRequest {
  method?: string;
  routeOptions?: { url?: string };
}

interface LoggedReply {
  statusCode?: number;
}

/** The matched route's template (`/anchors/:digest`), or null when no route matched. */
function routeTemplate(request: LoggedRequest): string | null {
  return request.routeOptions?.url ?? null;
}

function requestSummary(request: LoggedRequest): { method?: string; route: string | null } {
  return { method: request.method, route: routeTemplate(request) };
}

function replySummary(reply: LoggedReply): { statusCode?: number } {
  return { statusCode: reply.statusCode };
}

/**
 * An error's class, code and call sites, without its message: messages can quote the
 * input that caused them (a bundle fragment, a header value).
 */
function faultSummary(error: Error & { code?: unknown }): {
  type: string;
  code?: unknown;
  message: string;
  stack: string;
} {
  const frames = (error.stack ?? "")
    .split("\n")
    .filter((line) => line.trimStart().startsWith("at "));
  return {
    type: error.name,
    code: error.code,
    message: "(not logged)",
    stack: frames.join("\n"),
  };
}

/**
 * The client hung up before its request was answered (mid-body, or while waiting): what fails
 * afterwards is the consequence of that, not a fault of the service.
 */
function clientGone(request: FastifyRequest): boolean {
  const raw = request.raw;
  return raw.destroyed || raw.socket?.destroyed === true || raw.readableAborted;
}

/** Writes the single access line when a response finishes, and nothing else per request. */
class AccessLogController extends LogController {
  override incomingRequest(): void {}

  override routeNotFound(): void {}

  /** An error answer to a client that is gone is part of the abort, logged by `logAborts`. */
  override defaultErrorLog(
    error: Error,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (clientGone(request)) return;
    super.defaultErrorLog(error, request, reply, metadata);
  }

  /**
   * Fastify reports here an error answer that could not be serialized; for a request whose
   * client is gone that is only the body-read error of the abort, and the access line says it.
   */
  override serializerError(
    error: Error,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata: { statusCode: number },
  ): void {
    if (clientGone(request)) return;
    reply.log.error(
      { err: error, statusCode: metadata.statusCode },
      "The serializer for the given status code failed",
    );
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = {
      method: request.method,
      route: routeTemplate(request),
      status: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error && clientGone(request)) reply.log.info({ ...line, aborted: true }, "request aborted");
    else if (error) reply.log.error({ ...line, err: error }, "request errored");
    else reply.log.info(line, "request completed");
  }
}

/**
 * The access line of a request whose connection closed before its answer was sent (the client
 * left, or the connection guard answered 408 itself): no response finishes for it, so
 * `requestCompleted` never runs. At info; the status is the guard's, or null.
 */
export function logAborts(app: FastifyInstance): void {
  app.addHook("onRequestAbort", async (request) => {
    const status = guardAnswerStatus(request.raw.socket) ?? null;
    request.log.info(
      { method: request.method, route: routeTemplate(request), status, aborted: true },
      status === 408 ? "request timed out" : "request aborted",
    );
  });
}

export const abortLogging = fastifyPlugin(async (app: FastifyInstance) => logAborts(app), {
  name: PLATFORM.abortLogging,
  fastify: FASTIFY_VERSION,
});

/**
 * Fastify logs a bare `Server listening at …` per address it listens on; server.ts logs one
 * line with the same words and the whole startup state instead.
 */
function isFrameworkListeningLine(args: unknown[]): boolean {
  return (
    args.length === 1 && typeof args[0] === "string" && args[0].startsWith("Server listening at ")
  );
}

/** The longest an access line waits in the buffer before it is written. */
export const LOG_FLUSH_INTERVAL_MS = 200;
/** A buffer of this many bytes is written at once, without waiting for the interval. */
const LOG_BUFFER_BYTES = 8 * 1024;

/** Standard output, written in batches; `flushSync` writes what is buffered, before exit. */
export interface BufferedLog extends LogDestination {
  flushSync(): void;
  close(): void;
}

/**
 * Standard output for the service's log lines, buffered: one `write(2)` per request was
 * about 5% of the main thread's time under single-bundle load (issue 15; docs/benchmarks.md).
 * Lines reach the output at most `LOG_FLUSH_INTERVAL_MS` after they were logged, at once when
 * the buffer fills, and synchronously when the service closes or the process exits, so a
 * clean stop or a crash that exits loses none; a `kill -9` can lose the last interval's lines
 * (the audit trail, from which billing is metered, has its own flushing: audit.ts).
 */
export function bufferedStdout(): BufferedLog {
  const stream = destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES });
  const timer = setInterval(() => {
    try {
      stream.flush();
    } catch {
      // Not ready yet (the descriptor opens asynchronously) or busy: the next tick writes it.
    }
  }, LOG_FLUSH_INTERVAL_MS);
  timer.unref();
  const flushSync = () => {
    try {
      stream.flushSync();
    } catch {
      // Nothing is buffered, or the output is gone: there is nowhere left to write.
    }
  };
  process.once("exit", flushSync);
  return {
    write: (line) => {
      stream.write(line);
    },
    flushSync,
    close() {
      clearInterval(timer);
      process.removeListener("exit", flushSync);
      flushSync();
    },
  };
}

export function loggingOptions(
  config: ServiceConfig,
  output: LogDestination | undefined,
): Pick<FastifyServerOptions, "logger" | "logController"> {
  return {
    logger: {
      level: config.logLevel,
      ...(output === undefined ? {} : { stream: output }),
      serializers: { req: requestSummary, res: replySummary, err: faultSummary },
      // Level names, not numbers: the same format as `receiptd worker` (log-lines.ts).
      formatters: { level: (label: string) => ({ level: label }) },
      hooks: {
        logMethod(args, method) {
          if (isFrameworkListeningLine(args)) return;
          method.apply(this, args);
        },
      },
    },
    logController: new AccessLogController(),
  };
}
