/**
 * The HTTP server under Fastify, hardened against clients that hold connections (issue 16):
 *
 * - Receive deadlines: the headers within `headersTimeoutMs`, the whole request within
 *   `requestTimeoutMs` (Node answers 408 through `answerClientError`). Node checks them on an
 *   interval, which is kept well below the deadlines so that they hold to within a quarter.
 * - An idle timeout for the times the client is the one to act: a body that stops arriving, an
 *   answer the client does not read, an idle keep-alive connection. Silence while the service
 *   itself works on a complete request (a facilitator settling, a queue storing) is not the
 *   client's stall and is left alone.
 * - A connection cap with a reserve for health checks: past `maxConnections`, a connection is
 *   served one `GET /health` and closed, and anything else on it is a 503; past the reserve too,
 *   a new connection gets the 503 at once. The cap sits below the open-file limit, because a
 *   connection accepted past that limit is reset before anyone can answer it.
 * - Lingering close: when an answer closes a connection whose request body was not read (a
 *   refusal), the socket half-closes and keeps discarding what arrives for a moment before it
 *   is destroyed, because closing a socket with unread bytes sends a reset, and a reset can make
 *   the client's kernel drop the answer before the client reads it.
 * - Node's own refusals (a malformed request, headers too large, a timeout, an expectation it
 *   cannot meet) are answered in the service's `{error, detail}` shape.
 *
 * `registerConnectionHooks` adds the request-level half: a missing or repeated `Host` is a 400,
 * an answer sent before the body was read closes the connection, and `100 Continue` is sent
 * only once the request's credentials have been accepted.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance, FastifyServerFactoryHandler } from "fastify";
import type { HttpServerConfig } from "../config.js";
import { type ErrorCode, type ErrorFields, errorAnswer, sendAnswer } from "../errors.js";

/** How long a refused or reserve connection may sit idle, at most. */
const BRIEF_IDLE_MS = 2000;

/** Sockets answered 503 and lingering at once; past it a new socket is closed unanswered. */
const MAX_LINGERING_REFUSALS = 256;

/** Node's own test for an `Expect` that asks for `100 Continue`. */
const CONTINUE_EXPECTATION = /(?:^|\W)100-continue(?:$|\W)/i;

type Tier = "served" | "reserve" | "refused";

interface Exchange {
  request: IncomingMessage;
  response: ServerResponse;
}

interface ConnectionState {
  tier: Tier;
  /** Requests read from this connection whose answers are not finished yet. */
  exchanges: Set<Exchange>;
}

export interface ConnectionCounts {
  /** Connections admitted, served ones and reserve ones. */
  admitted: number;
  /** Connections admitted past `maxConnections`, for one health check each. */
  reserve: number;
  /** Connections refused with 503 since the server started. */
  refused: number;
}

/**
 * A complete HTTP/1.1 refusal that closes the connection, written straight to a socket (Node
 * answers these before Fastify has a request); its status comes from the error table.
 */
function rawAnswer(code: ErrorCode, reason: string, fields: ErrorFields, extra = ""): Buffer {
  const { statusCode, json } = errorAnswer(code, fields);
  return Buffer.from(
    `HTTP/1.1 ${statusCode} ${reason}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(json)}\r\n` +
      `${extra}Connection: close\r\n\r\n${json}`,
    "latin1",
  );
}

const TOO_MANY_CONNECTIONS = {
  detail: "the server holds as many connections as it serves; retry shortly",
};

const TOO_MANY_CONNECTIONS_ANSWER = rawAnswer(
  "too_many_connections",
  "Service Unavailable",
  TOO_MANY_CONNECTIONS,
  "Retry-After: 1\r\n",
);

/** A reason from Node's HTTP parser: one of its fixed phrases, never the request's bytes. */
function parserReason(error: Error & { code?: string; reason?: unknown }): string {
  const { reason, code } = error;
  if (typeof reason === "string" && /^[A-Za-z0-9 ,.'-]{1,80}$/.test(reason)) return reason;
  return typeof code === "string" && /^[A-Z0-9_]{1,60}$/.test(code) ? code : "unreadable";
}

const REQUEST_TIMEOUT_ANSWER = rawAnswer("request_timeout", "Request Timeout", {
  detail: "the request did not arrive in time",
});

/** The answer to an error Node raised before the request reached Fastify. */
function clientErrorAnswer(error: Error & { code?: string }): Buffer {
  switch (error.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return REQUEST_TIMEOUT_ANSWER;
    case "HPE_HEADER_OVERFLOW":
      return rawAnswer("headers_too_large", "Request Header Fields Too Large", {
        detail: "the request line and headers exceed the server's limit",
      });
    default:
      return rawAnswer("bad_request", "Bad Request", {
        detail: `malformed HTTP request: ${parserReason(error)}`,
      });
  }
}

function isHealthCheck(request: IncomingMessage): boolean {
  const path = (request.url ?? "").split("?", 1)[0];
  return (
    (request.method === "GET" || request.method === "HEAD") &&
    (path === "/health" || path === "/health/live")
  );
}

/**
 * Builds the Node server Fastify runs on (`serverFactory`) and answers Node's own refusals
 * (`clientErrorHandler`). One guard per app.
 */
export class ConnectionGuard {
  readonly #config: HttpServerConfig;
  readonly #states = new WeakMap<Socket, ConnectionState>();
  readonly #counts: ConnectionCounts = { admitted: 0, reserve: 0, refused: 0 };
  #lingeringRefusals = 0;

  constructor(config: HttpServerConfig) {
    this.#config = config;
  }

  /** Live counts, for tests and measurements. */
  counts(): Readonly<ConnectionCounts> {
    return { ...this.#counts };
  }

  get #lingerMs(): number {
    return Math.min(BRIEF_IDLE_MS, this.#config.idleTimeoutMs);
  }

  /** Fastify's `serverFactory`. */
  readonly serverFactory = (handler: FastifyServerFactoryHandler): Server => {
    const config = this.#config;
    const requestTimeout = config.requestTimeoutMs;
    const headersTimeout = Math.min(config.headersTimeoutMs, requestTimeout);
    const server = createServer(
      {
        headersTimeout,
        requestTimeout,
        keepAliveTimeout: config.keepAliveTimeoutMs,
        // Node looks for expired requests on this interval (30 s by default, which is why a
        // 60 s headers timeout used to close a stalled body only after about 89 s).
        connectionsCheckingInterval: Math.max(25, Math.min(5000, Math.floor(headersTimeout / 4))),
        // Answered by registerConnectionHooks in the service's shape, not with Node's empty 400.
        requireHostHeader: false,
      },
      (request, response) => this.#onRequest(handler, request, response),
    );
    server.setTimeout(config.idleTimeoutMs);
    server.on("timeout", (socket: Socket) => this.#onIdle(socket));
    server.on("connection", (socket: Socket) => this.#onConnection(socket));
    // With a listener, Node leaves `100 Continue` to us: sent once access is granted.
    server.on("checkContinue", (request: IncomingMessage, response: ServerResponse) =>
      this.#onRequest(handler, request, response),
    );
    server.on("checkExpectation", (_request: IncomingMessage, response: ServerResponse) => {
      sendJson(response, "expectation_failed", {
        detail: "the only expectation served is 100-continue",
      });
    });
    return server;
  };

  /** Fastify's `clientErrorHandler`: errors of Node's parser and its receive deadlines. */
  readonly clientError = (error: Error & { code?: string }, socket: Socket): void => {
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    // Once an answer has started on this socket, another one would corrupt it.
    const answering = [...(this.#states.get(socket)?.exchanges ?? [])].some(
      (exchange) => exchange.response.headersSent,
    );
    if (answering) {
      socket.destroy();
      return;
    }
    this.#answerAndClose(socket, clientErrorAnswer(error));
  };

  #onConnection(socket: Socket): void {
    const { maxConnections, healthReserveConnections } = this.#config;
    const counts = this.#counts;
    let tier: Tier;
    if (counts.admitted < maxConnections) tier = "served";
    else if (counts.admitted < maxConnections + healthReserveConnections) tier = "reserve";
    else tier = "refused";
    this.#states.set(socket, { tier, exchanges: new Set() });

    if (tier === "refused") {
      counts.refused += 1;
      if (this.#lingeringRefusals >= MAX_LINGERING_REFUSALS) {
        // A flood of new connections: answering each would hold a file per connection.
        socket.destroy();
        return;
      }
      this.#lingeringRefusals += 1;
      socket.once("close", () => {
        this.#lingeringRefusals -= 1;
      });
      socket.end(TOO_MANY_CONNECTIONS_ANSWER);
      this.#linger(socket);
      return;
    }

    counts.admitted += 1;
    if (tier === "reserve") counts.reserve += 1;
    socket.once("close", () => {
      counts.admitted -= 1;
      if (tier === "reserve") counts.reserve -= 1;
    });
    // A health check sends its request at once; a reserve slot is not for holding.
    if (tier === "reserve") socket.setTimeout(this.#lingerMs);
    socket.destroySoon = () => this.#closeAfterAnswer(socket);
  }

  #onRequest(
    handler: FastifyServerFactoryHandler,
    request: IncomingMessage,
    response: ServerResponse,
  ): void {
    const state = this.#states.get(request.socket);
    // Already answered 503 at connection time.
    if (state === undefined || state.tier === "refused") return;
    if (state.tier === "reserve") {
      if (!isHealthCheck(request)) {
        response.setHeader("retry-after", "1");
        sendJson(response, "too_many_connections", TOO_MANY_CONNECTIONS);
        return;
      }
      response.setHeader("connection", "close");
    }
    const exchange = { request, response };
    state.exchanges.add(exchange);
    response.once("close", () => state.exchanges.delete(exchange));
    handler(request, response);
  }

  /**
   * The socket saw no traffic for the idle timeout. The client is stalling unless every
   * request it sent is complete and awaits an answer the service has not started yet.
   */
  #onIdle(socket: Socket): void {
    const exchanges = [...(this.#states.get(socket)?.exchanges ?? [])];
    const serviceWorking =
      exchanges.length > 0 &&
      exchanges.every(({ request, response }) => request.complete && !response.headersSent);
    if (serviceWorking) return;
    // A body that stopped arriving: say so, as the request deadline would, then close.
    const stalledBody = exchanges.some(
      ({ request, response }) => !request.complete && !response.headersSent,
    );
    if (stalledBody && exchanges.every(({ response }) => !response.headersSent)) {
      this.#answerAndClose(socket, REQUEST_TIMEOUT_ANSWER);
      return;
    }
    socket.destroy();
  }

  /** Writes a closing answer, then lingers so that the client can read it. */
  #answerAndClose(socket: Socket, answer: Buffer): void {
    // The first answer is the one the client gets; a parser error that follows is not.
    if (!rawAnswerStatus.has(socket)) {
      rawAnswerStatus.set(socket, Number(answer.subarray(9, 12).toString("latin1")));
    }
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(answer);
    this.#linger(socket);
  }

  /**
   * Node calls `destroySoon` once an answer that closes the connection is sent. When a request
   * on it was not read to its end, the client may still be sending: half-close, keep reading
   * (Node's parser discards the rest of the body) and destroy once the client closes or after
   * a moment.
   */
  #closeAfterAnswer(socket: Socket): void {
    const exchanges = this.#states.get(socket)?.exchanges ?? new Set<Exchange>();
    const unread = [...exchanges].some(({ request }) => !request.complete);
    if (!unread) {
      if (socket.writable) socket.end();
      if (socket.writableFinished) socket.destroy();
      else socket.once("finish", () => socket.destroy());
      return;
    }
    if (socket.writable) socket.end();
    this.#linger(socket);
  }

  /** Destroys `socket` after the linger time unless it closes first. */
  #linger(socket: Socket): void {
    const timer = setTimeout(() => socket.destroy(), this.#lingerMs);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  }
}

/** The status of the raw answer the guard closed a socket with (a 408, a parser's 400, …). */
const rawAnswerStatus = new WeakMap<Socket, number>();

/**
 * The status the connection guard answered on `socket` itself, past Fastify, or undefined: the
 * access and audit lines of a request cut short that way name it (logging.ts, access.ts).
 */
export function guardAnswerStatus(socket: Socket | null | undefined): number | undefined {
  return socket == null ? undefined : rawAnswerStatus.get(socket);
}

/** A JSON answer on a raw response that closes the connection. */
function sendJson(response: ServerResponse, code: ErrorCode, fields: ErrorFields): void {
  const { statusCode, json } = errorAnswer(code, fields);
  response.writeHead(statusCode, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(json),
    connection: "close",
  });
  response.end(json);
}

/** How many times a header field occurs in the request as sent (Node keeps only the first of some). */
export function headerCount(request: IncomingMessage, name: string): number {
  let count = 0;
  const raw = request.rawHeaders;
  for (let index = 0; index < raw.length; index += 2) {
    if (raw[index]?.toLowerCase() === name) count += 1;
  }
  return count;
}

/**
 * The request-level half: registered before access control, so that a request without a
 * usable `Host` is refused before anything else, and so that `100 Continue` follows the
 * credential check (`preParsing` runs after every `onRequest` hook, and not at all once one
 * of them has answered).
 */
export function registerConnectionHooks(app: FastifyInstance): void {
  app.addHook("onRequest", async (request, reply) => {
    const hosts = headerCount(request.raw, "host");
    const http11 = request.raw.httpVersion === "1.1";
    if (hosts > 1 || (http11 && hosts === 0)) {
      reply.header("connection", "close");
      return sendAnswer(
        reply,
        errorAnswer("bad_request", {
          detail:
            hosts > 1
              ? "the Host header is repeated"
              : "an HTTP/1.1 request must carry a Host header",
        }),
      );
    }
  });

  app.addHook("preParsing", async (request, reply, payload) => {
    const expectation = request.headers.expect;
    if (
      expectation !== undefined &&
      request.raw.httpVersion === "1.1" &&
      CONTINUE_EXPECTATION.test(expectation) &&
      !reply.sent &&
      !reply.raw.headersSent
    ) {
      reply.raw.writeContinue();
    }
    return payload;
  });

  // An answer given before the body was read (a refusal at the door, a 413 on the declared
  // length) closes the connection rather than reading the rest of the body to keep it alive.
  // Only a socket's request says whether it was read to its end; `inject()`'s says nothing.
  app.addHook("onSend", async (request, reply, payload) => {
    if (request.raw.complete === false) reply.header("connection", "close");
    return payload;
  });
}
