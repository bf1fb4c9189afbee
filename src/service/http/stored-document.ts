/**
 * Serving stored documents (anchors, revocation documents, settlement receipts, crystals):
 * the stored bytes go out exactly as stored, with a strong ETag derived from them, and a
 * conditional GET whose `If-None-Match` matches is answered 304 (RFC 9110 §13.1.2).
 *
 * A 304 is charged like the 200 it stands for (docs/access-decisions.md, "Conditional
 * reads"): deciding it took the same store read, and a free 304 let anyone read the store
 * without limit with `If-None-Match: *`.
 */
import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { chargeWorkDone } from "../work-charged.js";

/** A strong entity tag: the SHA-256 of the bytes served. */
export function strongEtag(bytes: Uint8Array): string {
  return `"${createHash("sha256").update(bytes).digest("hex")}"`;
}

/** The opaque part of an entity tag, for weak comparison (`W/"x"` and `"x"` compare equal). */
function opaqueTag(tag: string): string {
  return tag.startsWith("W/") ? tag.slice(2) : tag;
}

/**
 * Whether an `If-None-Match` field value matches `etag` under RFC 9110's weak comparison:
 * `*` matches any current representation; otherwise a comma-separated list of entity tags
 * (quoted strings may contain commas, so the list is scanned, not split).
 */
export function ifNoneMatchMatches(
  fieldValue: string | string[] | undefined,
  etag: string,
): boolean {
  if (fieldValue === undefined) return false;
  const text = Array.isArray(fieldValue) ? fieldValue.join(",") : fieldValue;
  if (text.trim() === "*") return true;
  const wanted = opaqueTag(etag);
  const entityTag = /\s*(W\/)?("[^"]*")\s*(?:,|$)/gy;
  let match: RegExpExecArray | null = entityTag.exec(text);
  while (match !== null) {
    if (match[2] === wanted) return true;
    if (entityTag.lastIndex >= text.length) break;
    match = entityTag.exec(text);
  }
  return false;
}

export interface StoredDocumentOptions {
  /** Defaults to `public, max-age=300` (service.md §2–§4). */
  cacheControl?: string;
  /** Defaults to the SHA-256 strong tag of `bytes`. */
  etag?: string;
}

/** Answers 304 to a conditional read whose tag matched, charged like its 200. */
export function sendNotModified(reply: FastifyReply): FastifyReply {
  chargeWorkDone(reply);
  return reply.code(304).send();
}

/** Sends `bytes` as the JSON document they are, or 304 when the client already has them. */
export function sendStoredDocument(
  request: FastifyRequest,
  reply: FastifyReply,
  bytes: Uint8Array,
  options: StoredDocumentOptions = {},
): FastifyReply {
  const etag = options.etag ?? strongEtag(bytes);
  reply.header("etag", etag).header("cache-control", options.cacheControl ?? "public, max-age=300");
  if (ifNoneMatchMatches(request.headers["if-none-match"], etag)) return sendNotModified(reply);
  return reply
    .code(200)
    .type("application/json; charset=utf-8")
    .send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}
