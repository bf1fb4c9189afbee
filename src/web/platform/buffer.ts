/**
 * `Buffer` for the browser build: the `buffer` package (Node's Buffer over Uint8Array, the
 * polyfill bundlers use), completed where the verifier relies on Node behaviour it lacks.
 * `scripts/build-web.mjs` injects this module, so every free `Buffer` in `src/verifier`
 * means this one in the page; nothing is put on `globalThis`.
 *
 * Completed here:
 * - the `base64url` encoding (`Buffer.from(text, "base64url")`, `toString("base64url")`):
 *   Node's base64 decoder already takes `-` and `_`, so it is the base64 decoding of the
 *   text with the URL alphabet mapped back;
 * - `equals` with any Uint8Array (the polyfill insists on a Buffer; Node does not).
 *
 * `test/web/buffer-shim.test.ts` compares it with Node's Buffer for what the verifier uses.
 */
import { Buffer as PolyfillBuffer } from "buffer";

type FromArguments = Parameters<typeof PolyfillBuffer.from>;

const polyfillFrom = PolyfillBuffer.from.bind(PolyfillBuffer) as (
  ...args: unknown[]
) => PolyfillBuffer;
const polyfillToString = PolyfillBuffer.prototype.toString;
const polyfillIsEncoding = PolyfillBuffer.isEncoding.bind(PolyfillBuffer);

function isBase64Url(encoding: unknown): boolean {
  return typeof encoding === "string" && encoding.toLowerCase() === "base64url";
}

PolyfillBuffer.from = ((...args: FromArguments) => {
  const [value, encoding] = args as unknown[];
  if (typeof value === "string" && isBase64Url(encoding)) {
    return polyfillFrom(value.replaceAll("-", "+").replaceAll("_", "/"), "base64");
  }
  return polyfillFrom(...args);
}) as typeof PolyfillBuffer.from;

PolyfillBuffer.isEncoding = ((encoding: string) =>
  isBase64Url(encoding) || polyfillIsEncoding(encoding)) as typeof PolyfillBuffer.isEncoding;

PolyfillBuffer.prototype.toString = function toStringWithBase64Url(
  this: PolyfillBuffer,
  encoding?: string,
  start?: number,
  end?: number,
): string {
  if (!isBase64Url(encoding)) return polyfillToString.call(this, encoding, start, end);
  return polyfillToString
    .call(this, "base64", start, end)
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
};

PolyfillBuffer.prototype.equals = function equals(
  this: PolyfillBuffer,
  other: Uint8Array,
): boolean {
  if (!(other instanceof Uint8Array)) throw new TypeError("argument must be a Uint8Array");
  if (this.length !== other.length) return false;
  for (let i = 0; i < this.length; i++) if (this[i] !== other[i]) return false;
  return true;
};

export const Buffer = PolyfillBuffer;
