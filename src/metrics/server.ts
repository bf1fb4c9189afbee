/**
 * The `/metrics` listener (docs/operations.md "Metrics"): its own socket, never the API port,
 * so the figures are not public wherever the API is. It binds `METRICS_HOST` (loopback by
 * default) and, when `METRICS_TOKEN` is set, answers only `Authorization: Bearer <token>`.
 * Web processes and `receiptd worker` each run one for their own registry.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { METRICS_CONTENT_TYPE } from "./metrics.js";

export interface MetricsListenerConfig {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** The bearer token scrapes must present, or null when the bind address is the guard. */
  token: string | null;
  /** `METRICS_MAX_CONNECTIONS`: connections held at once; more are closed as they arrive. */
  maxConnections: number;
}

/** A scraper sends its request at once; anything slower is not a scraper. */
const HEADERS_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 10_000;
/** No byte either way for this long (an answer not read, say) closes the connection. */
const IDLE_TIMEOUT_MS = 30_000;

export interface MetricsServer {
  /** `http://host:port` as bound. */
  readonly url: string;
  close(): Promise<void>;
}

const JSON_TYPE = "application/json; charset=utf-8";

/** A refusal closes its connection: only a scraper with the token keeps one open. */
function sendJson(response: ServerResponse, status: number, body: object, headers = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": JSON_TYPE,
    "content-length": Buffer.byteLength(text),
    connection: "close",
    ...headers,
  });
  response.end(text);
}

/** Compares digests, so neither the token's length nor its bytes leak through timing. */
function tokenMatches(expected: string, header: string | undefined): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  if (match?.[1] === undefined) return false;
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(expected), digest(match[1]));
}

/** Serves `render()` at `GET /metrics` (and HEAD); everything else is a JSON refusal. */
export async function startMetricsServer(
  config: MetricsListenerConfig,
  render: () => Promise<string>,
  onError: (error: unknown) => void = () => {},
): Promise<MetricsServer> {
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path !== "/metrics") return sendJson(response, 404, { error: "not_found" });
    if (request.method !== "GET" && request.method !== "HEAD") {
      return sendJson(response, 405, { error: "method_not_allowed" }, { allow: "GET, HEAD" });
    }
    if (config.token !== null && !tokenMatches(config.token, request.headers.authorization)) {
      return sendJson(
        response,
        401,
        {
          error: "metrics_token_required",
          detail: "send the METRICS_TOKEN as 'Authorization: Bearer <token>'",
        },
        { "www-authenticate": 'Bearer realm="receiptd-metrics"' },
      );
    }
    const text = await render();
    response.writeHead(200, {
      "content-type": METRICS_CONTENT_TYPE,
      "content-length": Buffer.byteLength(text),
      "cache-control": "no-store",
    });
    response.end(request.method === "HEAD" ? undefined : text);
  };
  const server = createServer({ connectionsCheckingInterval: 1_000 }, (request, response) => {
    // The body of a scrape is never read; drain it so the connection can be reused.
    request.resume();
    handle(request, response).catch((error: unknown) => {
      onError(error);
      if (!response.headersSent) sendJson(response, 500, { error: "internal_error" });
      else response.destroy();
    });
  });
  // Prometheus scrapes every 15-60 s over one kept-alive connection; slower clients are cut.
  // Its own small cap and short deadlines: the API's connection guard does not cover this
  // socket, and without them idle sockets took every file of the process (issue 22).
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.maxConnections = config.maxConnections;
  server.setTimeout(IDLE_TIMEOUT_MS);
  server.listen(config.port, config.host);
  await Promise.race([
    once(server, "listening"),
    once(server, "error").then(([error]) => Promise.reject(error)),
  ]);
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
