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
 * - Shares per client address (issue 22): one address (an IPv4 address, an IPv6 /64) holds
 *   at most `maxConnectionsPerAddress` connections (past it, only the reserve) and a quarter
 *   of the reserve. A connection that would pass the cap is admitted by closing an idle one
 *   of the address that holds the most, so connections that only wait cannot keep a new
 *   client out. The socket's peer is the address: a proxy named in
 *   `TRUST_PROXY` speaks for many clients and has no share of its own.
 * - A minimum read rate: an answer the client reads slower than `minReadBytesPerSecond`, over
 *   each idle-timeout period, closes its connection (a trickle keeps the idle timeout away).
 * - Lingering close: when an answer closes a connection whose request body was not read (a
 *   refusal), the socket half-closes and keeps discarding what arrives for a moment before it
 *   is destroyed, because closing a socket with unread bytes sends a reset, and a reset can make
 *   the client's kernel drop the answer before the client reads it.
 * - Node's own refusals (a malformed request, headers too large, a timeout, an expectation it
 *   cannot meet) are answered in the service's `{error, detail}` shape.
 *
 * `registerConnectionHooks` adds the request-level half: a missing or repeated `Host` is a 400,
 * and an answer sent before the body was read closes the connection. (`100 Continue` is sent
 * once a request is admitted: `body-admission.ts`.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { BlockList, isIP, type Socket } from "node:net";
import type { FastifyInstance, FastifyServerFactoryHandler } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { addressNetwork } from "../../access/evaluation/client-address.js";
import type { HttpServerConfig, TrustProxy } from "../config.js";
import { type ErrorCode, type ErrorFields, errorAnswer, sendAnswer } from "../errors.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";

/** How long a refused or reserve connection may sit idle, at most. */
const BRIEF_IDLE_MS = 2000;

/** Sockets answered 503 and lingering at once; past it a new socket is closed unanswered. */
const MAX_LINGERING_REFUSALS = 256;

type Tier = "served" | "reserve" | "refused";

interface Exchange {
  request: IncomingMessage;
  response: ServerResponse;
}

interface ConnectionState {
  tier: Tier;
  /** Requests read from this connection whose answers are not finished yet. */
  exchanges: Set<Exchange>;
  /** The client network whose share the connection counts against; null: a trusted proxy. */
  network: string | null;
  /** Set once the connection's slot is given back (closed, or closed to make room). */
  released: boolean;
  /** The read-rate check, while answers wait to be written out; null otherwise. */
  readWatch: NodeJS.Timeout | null;
}

/** The connections one client network holds. */
interface AddressShare {
  /** Served connections, oldest first. */
  served: Set<Socket>;
  /** Those of them with no request in progress: the ones closed to make room. */
  idle: Set<Socket>;
  reserve: number;
}

/** The ranges `TRUST_PROXY`'s names stand for (as in proxy-addr, which Fastify uses). */
const PROXY_RANGES: Record<string, [string, number, "ipv4" | "ipv6"][]> = {
  loopback: [
    ["127.0.0.0", 8, "ipv4"],
    ["::1", 128, "ipv6"],
  ],
  linklocal: [
    ["169.254.0.0", 16, "ipv4"],
    ["fe80::", 10, "ipv6"],
  ],
  uniquelocal: [
    ["10.0.0.0", 8, "ipv4"],
    ["172.16.0.0", 12, "ipv4"],
    ["192.168.0.0", 16, "ipv4"],
    ["fc00::", 7, "ipv6"],
  ],
};

/** The proxies of `TRUST_PROXY` as a block list, or null when none are trusted. */
function trustedProxies(trustProxy: TrustProxy): BlockList | null {
  if (trustProxy === false) return null;
  const list = new BlockList();
  for (const entry of trustProxy) {
    const named = PROXY_RANGES[entry];
    if (named !== undefined) {
      for (const [network, prefix, family] of named) list.addSubnet(network, prefix, family);
      continue;
    }
    const [address = "", bits] = entry.split("/");
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return list;
}

export interface ConnectionCounts {
  /** Connections admitted, served ones and reserve ones. */
  admitted: number;
  /** Connections admitted past `maxConnections`, for one health check each. */
  reserve: number;
  /** Connections refused with 503 since the server started. */
  refused: number;
  /** Idle connections closed to admit a new one, since the server started. */
  evicted: number;
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
  readonly #proxies: BlockList | null;
  readonly #states = new WeakMap<Socket, ConnectionState>();
  readonly #shares = new Map<string, AddressShare>();
  readonly #counts: ConnectionCounts = { admitted: 0, reserve: 0, refused: 0, evicted: 0 };
  #lingeringRefusals = 0;

  constructor(config: HttpServerConfig, trustProxy: TrustProxy = false) {
    this.#config = config;
    this.#proxies = trustedProxies(trustProxy);
  }

  /** Reserve connections one address may hold: a quarter of the reserve, at least one. */
  get #reserveShare(): number {
    return Math.max(1, Math.floor(this.#config.healthReserveConnections / 4));
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

  /** The client network of a socket, or null for a trusted proxy (or an unknown peer). */
  #networkOf(socket: Socket): string | null {
    const address = socket.remoteAddress;
    if (address === undefined) return null;
    const family = isIP(address);
    if (family === 0) return null;
    if (this.#proxies?.check(address, family === 6 ? "ipv6" : "ipv4")) return null;
    return addressNetwork(address);
  }

  #shareOf(network: string): AddressShare {
    let share = this.#shares.get(network);
    if (share === undefined) {
      share = { served: new Set(), idle: new Set(), reserve: 0 };
      this.#shares.set(network, share);
    }
    return share;
  }

  /** Closes the oldest idle connection of `share`; whether there was one. */
  #evictFrom(share: AddressShare | undefined): boolean {
    const [socket] = share?.idle ?? [];
    if (socket === undefined) return false;
    this.#release(socket);
    this.#counts.evicted += 1;
    socket.destroy();
    return true;
  }

  /** Closes an idle connection of the address that holds the most; whether there was one. */
  #evictHeaviest(): boolean {
    let heaviest: AddressShare | undefined;
    for (const share of this.#shares.values()) {
      if (share.idle.size > 0 && share.served.size > (heaviest?.served.size ?? 0)) {
        heaviest = share;
      }
    }
    return this.#evictFrom(heaviest);
  }

  /** Where a new connection from `network` goes, after closing idle ones to make room. */
  #tierFor(network: string | null): Tier {
    const { maxConnections, healthReserveConnections, maxConnectionsPerAddress } = this.#config;
    const counts = this.#counts;
    const share = network === null ? undefined : this.#shares.get(network);
    const overShare = share !== undefined && share.served.size >= maxConnectionsPerAddress;
    const served = counts.admitted - counts.reserve;
    // An address at its share gets only the reserve: closing its own idle connections for it
    // would let a client that reconnects at once churn through them for ever.
    if (!overShare && (served < maxConnections || this.#evictHeaviest())) return "served";
    const reserveFull = counts.reserve >= healthReserveConnections;
    const addressReserveFull = share !== undefined && share.reserve >= this.#reserveShare;
    return reserveFull || addressReserveFull ? "refused" : "reserve";
  }

  #onConnection(socket: Socket): void {
    const network = this.#networkOf(socket);
    const tier = this.#tierFor(network);
    const state: ConnectionState = {
      tier,
      exchanges: new Set(),
      network,
      released: false,
      readWatch: null,
    };
    this.#states.set(socket, state);
    const counts = this.#counts;

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
    if (network !== null) {
      const share = this.#shareOf(network);
      if (tier === "reserve") share.reserve += 1;
      else {
        share.served.add(socket);
        share.idle.add(socket);
      }
    }
    socket.once("close", () => this.#release(socket));
    // A health check sends its request at once; a reserve slot is not for holding.
    if (tier === "reserve") socket.setTimeout(this.#lingerMs);
    socket.destroySoon = () => this.#closeAfterAnswer(socket);
  }

  /** Gives a connection's slot back, once: when it closes, or when it is closed to make room. */
  #release(socket: Socket): void {
    const state = this.#states.get(socket);
    if (state === undefined || state.released || state.tier === "refused") return;
    state.released = true;
    const counts = this.#counts;
    counts.admitted -= 1;
    if (state.tier === "reserve") counts.reserve -= 1;
    if (state.network === null) return;
    const share = this.#shares.get(state.network);
    if (share === undefined) return;
    if (state.tier === "reserve") share.reserve -= 1;
    share.served.delete(socket);
    share.idle.delete(socket);
    if (share.served.size === 0 && share.reserve === 0) this.#shares.delete(state.network);
  }

  /** Marks whether a served connection has a request in progress (idle ones make room). */
  #setBusy(socket: Socket, state: ConnectionState): void {
    if (state.released || state.tier !== "served" || state.network === null) return;
    const share = this.#shares.get(state.network);
    if (share === undefined) return;
    if (state.exchanges.size > 0) share.idle.delete(socket);
    else share.idle.add(socket);
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
    const socket = request.socket;
    state.exchanges.add(exchange);
    this.#setBusy(socket, state);
    response.once("close", () => {
      state.exchanges.delete(exchange);
      this.#setBusy(socket, state);
    });
    // Ended but not yet written out: from here on the client is the one to act.
    response.once("prefinish", () => this.#watchReadRate(socket, state));
    handler(request, response);
  }

  /**
   * Closes the connection when the client reads its answers slower than the minimum rate,
   * measured over each idle-timeout period in which answers wait to be written out. The idle
   * timeout cannot see this: every byte the client reads lets the server write again.
   */
  #watchReadRate(socket: Socket, state: ConnectionState): void {
    const rate = this.#config.minReadBytesPerSecond;
    if (rate === 0 || state.readWatch !== null || socket.destroyed) return;
    const periodMs = this.#config.idleTimeoutMs;
    const written = () => socket.bytesWritten - socket.writableLength;
    let mark = written();
    const stop = () => {
      if (state.readWatch !== null) clearInterval(state.readWatch);
      state.readWatch = null;
      socket.off("close", stop);
    };
    state.readWatch = setInterval(() => {
      const now = written();
      if (socket.writableLength === 0) stop();
      else if (now - mark < (rate * periodMs) / 1000) {
        stop();
        socket.destroy();
      }
      mark = now;
    }, periodMs);
    state.readWatch.unref();
    socket.once("close", stop);
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
    const field = raw[index];
    // The length first: most fields are not `name`, and need no lowercase copy to say so.
    if (field !== undefined && field.length === name.length && field.toLowerCase() === name) {
      count += 1;
    }
  }
  return count;
}

/**
 * The request-level half: registered before access control, so that a request without a
 * usable `Host` is refused before anything else.
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

  // An answer given before the body was read (a refusal at the door, a 413 on the declared
  // length) closes the connection rather than reading the rest of the body to keep it alive.
  // Only a socket's request says whether it was read to its end; `inject()`'s says nothing.
  // Callback-style: it never waits, so no promise per request (issue 33).
  app.addHook("onSend", (request, reply, payload, done) => {
    if (request.raw.complete === false) reply.header("connection", "close");
    done(null, payload);
  });
}

export const connectionHooks = fastifyPlugin(
  async (app: FastifyInstance) => registerConnectionHooks(app),
  {
    name: PLATFORM.connectionHooks,
    fastify: FASTIFY_VERSION,
    // Its answers are in the service's error shape, set by the error handling's plugin.
    dependencies: [PLATFORM.errors],
  },
);
