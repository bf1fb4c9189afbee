/**
 * The raw request body as handlers use it; it is read by `http/body-admission.ts`.
 */
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
