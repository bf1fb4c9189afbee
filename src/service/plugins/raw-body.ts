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
 * The body as an ArrayBuffer of its own, to be moved (not copied) to a worker thread. A body
 * that already fills its own ArrayBuffer (any body over 4 KiB, which Node assembles in a
 * fresh allocation) is handed over as it is, and `body` is empty afterwards; a small body may
 * sit in Node's shared Buffer pool, which cannot be moved, so it is copied once, here.
 */
export function transferableBody(body: unknown): ArrayBuffer {
  const bytes = rawBody(body);
  const whole = bytes.buffer;
  if (whole instanceof ArrayBuffer && bytes.byteOffset === 0 && whole.byteLength === bytes.length) {
    return whole;
  }
  return new Uint8Array(bytes).buffer;
}
