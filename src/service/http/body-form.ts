/**
 * What a request body must be, decided from its headers before any of it is read (issue 37).
 * Bodies are read as raw bytes whatever the Content-Type says (service-decisions.md,
 * "Content-Type is not required"), so two framings used to reach the JSON parser as if they
 * were JSON and came back as a puzzling `invalid_json` "Expecting value: line 1 column 1":
 *
 * - a `Content-Encoding` other than `identity` (`gzip`, `br`, …): the bytes are compressed, not
 *   JSON. Refused `415 unsupported_content_encoding` with `supported: ["identity"]` and an
 *   `Accept-Encoding: identity` header (RFC 9110 §15.5.16, §12.5.3), rather than decoded: a
 *   decoder would turn a 1 MiB upload into many MiB of work before the first JSON byte, and
 *   every client that can compress can also send the few hundred KiB uncompressed.
 * - a `multipart/*` Content-Type (`curl -F`, an HTML form upload): the JSON is wrapped in
 *   boundaries and part headers. Refused `415 unsupported_media_type` naming
 *   `application/json`. Other types (`text/plain`, curl -d's form type, none) stay accepted:
 *   their bytes are the document itself.
 *
 * Registered after access control (a `preParsing` hook runs once every credential check has
 * passed) and before body admission, so a body that would be refused holds no memory budget.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { type Answer, errorAnswer, sendAnswer } from "../errors.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";

/** The content codings a request body may carry: none. */
export const SUPPORTED_CONTENT_ENCODINGS = ["identity"] as const;
/** The one media type a body is, however it is labelled (others are read as it). */
export const SUPPORTED_MEDIA_TYPES = ["application/json"] as const;

/** A refusal and the headers that go with it. */
export interface BodyFormRefusal {
  answer: Answer;
  headers: Record<string, string>;
}

/**
 * Whether a body of `request` will be read: a routed method that carries one, with a non-zero
 * Content-Length or chunked framing. (An unknown path is answered 404 whatever its body; GET
 * and HEAD bodies are never read.)
 */
function readsBody(request: FastifyRequest): boolean {
  if (request.routeOptions.url === undefined) return false;
  if (request.method === "GET" || request.method === "HEAD") return false;
  const length = request.headers["content-length"];
  if (length !== undefined) return length.trim() !== "0";
  return request.headers["transfer-encoding"] !== undefined;
}

/** The codings of a Content-Encoding header other than `identity`, lower-cased, in order. */
export function foreignContentCodings(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  return [header]
    .flat()
    .flatMap((value) => value.split(","))
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== "" && coding !== "identity");
}

/** The media type of a Content-Type header without its parameters, lower-cased. */
function mediaTypeOf(contentType: string | undefined): string | null {
  if (contentType === undefined) return null;
  // What nearly every request sends: no split, trim or lowercase copy for it.
  if (contentType === "application/json") return contentType;
  return (contentType.split(";")[0] ?? "").trim().toLowerCase();
}

/** Why the body of `request` will not be read, or null when it may be. */
export function bodyFormRefusal(request: FastifyRequest): BodyFormRefusal | null {
  if (!readsBody(request)) return null;
  const codings = foreignContentCodings(request.headers["content-encoding"]);
  if (codings.length > 0) {
    return {
      answer: errorAnswer("unsupported_content_encoding", {
        detail: `Content-Encoding ${codings.join(", ")} is not accepted: send the body uncompressed (no Content-Encoding, or identity)`,
        supported: [...SUPPORTED_CONTENT_ENCODINGS],
      }),
      // RFC 9110 §12.5.3: a 415 for a content coding says which codings are accepted.
      headers: { "accept-encoding": SUPPORTED_CONTENT_ENCODINGS.join(", ") },
    };
  }
  const mediaType = mediaTypeOf(request.headers["content-type"]);
  if (mediaType?.startsWith("multipart/")) {
    return {
      answer: errorAnswer("unsupported_media_type", {
        detail: `${mediaType} is not accepted: the body is the JSON document itself, sent as application/json (with curl: --data-binary @file.json -H 'Content-Type: application/json', not -F)`,
        supported: [...SUPPORTED_MEDIA_TYPES],
      }),
      headers: {},
    };
  }
  return null;
}

export function registerBodyForm(app: FastifyInstance): void {
  app.addHook("preParsing", async (request, reply: FastifyReply, payload) => {
    if (reply.sent) return payload;
    const refusal = bodyFormRefusal(request);
    if (refusal === null) return payload;
    // The body stays unread, so the connection cannot carry another request.
    return sendAnswer(reply.headers({ ...refusal.headers, connection: "close" }), refusal.answer);
  });
}

export const bodyForm = fastifyPlugin(async (app: FastifyInstance) => registerBodyForm(app), {
  name: PLATFORM.bodyForm,
  fastify: FASTIFY_VERSION,
  dependencies: [PLATFORM.access],
});
