/**
 * Request bodies reach handlers as the raw bytes, whatever the Content-Type says: the main
 * thread never parses JSON, a worker parses it strictly (verifier.md §1.2) where the CPU
 * work belongs. Bodies over the route's limit are refused by Fastify while streaming
 * (`FST_ERR_CTP_BODY_TOO_LARGE`, answered 413), so they are never held in memory.
 */
import type { FastifyInstance } from "fastify";

export function registerRawBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => {
    done(null, body);
  });
}

/** The body as bytes; a request without a body has zero of them. */
export function rawBody(body: unknown): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.alloc(0);
}

/**
 * The body as an ArrayBuffer of its own, to be moved (not copied) to a worker thread. Node may
 * carve a small body out of a shared Buffer pool, which cannot be transferred, so the bytes
 * are copied exactly once, here.
 */
export function transferableBody(body: unknown): ArrayBuffer {
  return new Uint8Array(rawBody(body)).buffer;
}
