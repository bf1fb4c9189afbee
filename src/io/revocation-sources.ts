/**
 * Reading revocation documents from files and URLs (verifier.md §7 `load_statements`).
 * The I/O half of the loader; judging the bytes is the pure `parseRevocationDocument`.
 *
 * At most 1 MiB + 1 bytes are ever read from a source: one byte past the limit is enough to
 * know the document is too large, and a hostile source cannot make us buffer more.
 *
 * A URL that answers the service contract's `404 {"error":"no_document"}` (service.md §3: the
 * issuer has no revocation document, e.g. it never rotated) is an empty list: the service has
 * said, with authority, that nothing is revoked. Every other failure, a network error, a 5xx,
 * or any other 404, is `revocations_unreachable`, as in the reference (docs/cli.md).
 */
import { createReadStream } from "node:fs";
import type { JsonValue } from "../verifier/json/value.js";
import {
  MAX_REVOCATION_DOCUMENT_BYTES,
  parseRevocationDocument,
  RevocationLoadError,
} from "../verifier/revocations/document.js";
import { mergeStatements } from "../verifier/revocations/statements.js";

export const REVOCATION_FETCH_TIMEOUT_MS = 15_000;

export interface RevocationSourceOptions {
  /** Deadline for a URL source, covering connection, redirects and the whole body. */
  timeoutMs?: number;
}

const READ_LIMIT = MAX_REVOCATION_DOCUMENT_BYTES + 1;
/** Plain http is tolerated only where nobody can tamper with it on the way. */
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);
/** Python's urllib follows up to 10 redirects. */
const MAX_REDIRECTS = 10;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** `{"error":"no_document"}` is 24 bytes; a 404 body longer than this is someone else's page. */
const NO_DOCUMENT_READ_LIMIT = 1024;

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch reports every network failure as "fetch failed" and puts the reason in `cause`.
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}

function unreachable(detail: string): RevocationLoadError {
  return new RevocationLoadError("revocations_unreachable", detail);
}

/** The first `limit` bytes of `chunks`; stops pulling as soon as it has them. */
async function readAtMost(chunks: AsyncIterable<Uint8Array>, limit: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    const wanted = Math.min(chunk.length, limit - total);
    parts.push(chunk.subarray(0, wanted));
    total += wanted;
    if (total >= limit) break;
  }
  return Buffer.concat(parts, total);
}

async function readFileSource(path: string): Promise<Uint8Array> {
  try {
    return await readAtMost(createReadStream(path, { end: READ_LIMIT - 1 }), READ_LIMIT);
  } catch (error) {
    throw unreachable(`cannot read ${path}: ${errorText(error)}`);
  }
}

/** Applied to the source and to every redirect target, so a redirect cannot downgrade to http. */
function permittedUrl(location: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(location, base);
  } catch {
    throw unreachable(`${location} is not a valid URL`);
  }
  const loopbackHttp = url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== "https:" && !loopbackHttp) {
    throw new RevocationLoadError(
      "revocations_insecure_url",
      `${url.href} is not https (plain http is allowed only for 127.0.0.1, localhost and ::1)`,
    );
  }
  return url;
}

/** Whether a 404's body is the service contract's `{"error":"no_document"}`. */
function isNoDocumentAnswer(body: Uint8Array): boolean {
  let answer: unknown;
  try {
    answer = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    return false;
  }
  return (
    typeof answer === "object" &&
    answer !== null &&
    !Array.isArray(answer) &&
    (answer as Record<string, unknown>).error === "no_document"
  );
}

/** The document's bytes, or null when the service answers that the issuer has none. */
async function fetchSource(source: string, timeoutMs: number): Promise<Uint8Array | null> {
  let url = permittedUrl(source);
  const signal = AbortSignal.timeout(timeoutMs);
  const failure = (error: unknown): RevocationLoadError =>
    signal.aborted
      ? unreachable(`${url.href} did not answer within ${timeoutMs} ms`)
      : unreachable(`cannot fetch ${url.href}: ${errorText(error)}`);
  for (let redirects = 0; ; redirects++) {
    let response: Response;
    try {
      response = await fetch(url, { redirect: "manual", signal });
    } catch (error) {
      throw failure(error);
    }
    const location = response.headers.get("location");
    if (REDIRECT_STATUSES.has(response.status) && location !== null) {
      await response.body?.cancel();
      if (redirects === MAX_REDIRECTS) throw unreachable(`${source}: too many redirects`);
      url = permittedUrl(location, url);
      continue;
    }
    if (response.status === 404 && response.body !== null) {
      let body: Uint8Array;
      try {
        body = await readAtMost(response.body, NO_DOCUMENT_READ_LIMIT + 1);
      } catch (error) {
        throw failure(error);
      } finally {
        await response.body.cancel().catch(() => {});
      }
      if (body.length <= NO_DOCUMENT_READ_LIMIT && isNoDocumentAnswer(body)) return null;
      throw unreachable(`${url.href} answered HTTP 404`);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw unreachable(`${url.href} answered HTTP ${response.status}`);
    }
    if (response.body === null) return new Uint8Array();
    try {
      return await readAtMost(response.body, READ_LIMIT);
    } catch (error) {
      throw failure(error);
    }
  }
}

function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * The statements of the revocation document at `source` (a file path or an http(s) URL),
 * unvalidated. Throws `RevocationLoadError`.
 */
export async function loadRevocationStatements(
  source: string,
  options: RevocationSourceOptions = {},
): Promise<JsonValue[]> {
  const bytes = isUrl(source)
    ? await fetchSource(source, options.timeoutMs ?? REVOCATION_FETCH_TIMEOUT_MS)
    : await readFileSource(source);
  if (bytes === null) return [];
  try {
    return parseRevocationDocument(bytes);
  } catch (error) {
    // With several sources, the detail has to say which one is unusable.
    if (error instanceof RevocationLoadError) {
      throw new RevocationLoadError(error.code, `${source}: ${error.detail}`);
    }
    throw error;
  }
}

/**
 * Loads every source and merges the lists in order. Sources are read one after another, so
 * the error reported is always that of the first unusable source, as in the reference.
 */
export async function loadAndMergeRevocations(
  sources: readonly string[],
  options: RevocationSourceOptions = {},
): Promise<JsonValue[]> {
  const lists: JsonValue[][] = [];
  for (const source of sources) lists.push(await loadRevocationStatements(source, options));
  return mergeStatements(...lists);
}
