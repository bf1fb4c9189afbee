/**
 * The Streamable HTTP checks made from headers alone, on the main thread, before a body goes
 * to a worker (protocols.md §3.3). This server answers every request with one JSON response,
 * so all it needs from `Accept` is that JSON is acceptable.
 */

/** The lower-case `type/subtype` of a media type or media range, without parameters. */
function essence(mediaType: string): string {
  return (mediaType.split(";", 1)[0] ?? "").trim().toLowerCase();
}

function quality(mediaRange: string): number {
  for (const parameter of mediaRange.split(";").slice(1)) {
    const [name, value] = parameter.split("=", 2).map((part) => part.trim());
    if (name?.toLowerCase() === "q") {
      const q = Number(value);
      return Number.isFinite(q) ? q : 0;
    }
  }
  return 1;
}

/**
 * Whether `accept` lets the server answer `application/json` (RFC 9110 §12.5.1: the most
 * specific matching range decides, and `q=0` refuses). No `Accept` at all accepts anything,
 * so plain HTTP tools work; MCP clients send `application/json, text/event-stream`.
 */
export function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === "") return true;
  const specificity: Record<string, number> = {
    "application/json": 3,
    "application/*": 2,
    "*/*": 1,
  };
  let best = { specificity: 0, quality: 0 };
  for (const range of accept.split(",")) {
    const rank = specificity[essence(range)];
    if (rank !== undefined && rank > best.specificity) {
      best = { specificity: rank, quality: quality(range) };
    }
  }
  return best.quality > 0;
}

/** A body with no `Content-Type` is read as JSON, like every other endpoint's. */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType === undefined || essence(contentType) === "application/json";
}

/**
 * Whether a browser request from `origin` may use the endpoint (Streamable HTTP requires
 * servers to validate `Origin`). `allowed` holds the service's configured public origins: the
 * `Host` a client sends proves nothing, since a page that rebinds its own name to this server
 * (DNS rebinding) sends its own name in both `Origin` and `Host`. Requests without `Origin` do
 * not come from a web page and are not affected.
 */
export function isAllowedOrigin(origin: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    // `Origin: null` (sandboxed frames, file: pages) and anything unreadable.
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  // `URL.origin` drops a default port, so `https://a.example:443` and `https://a.example` agree.
  return allowed.has(url.origin);
}

/** The origins `POST /mcp` accepts: `PUBLIC_BASE_URL`'s and those of `MCP_ALLOWED_ORIGINS`. */
export function allowedOrigins(publicBaseUrl: string, extra: readonly string[]): Set<string> {
  return new Set([new URL(publicBaseUrl).origin, ...extra]);
}
