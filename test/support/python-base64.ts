/**
 * base64url the way the reference's Python clients write and read it, so tests can make
 * inputs as those clients make them:
 *
 * - `urlsafe_b64encode` is `b64encode` with `+`/`/` turned into `-`/`_`: it always pads with
 *   `=` to a multiple of 4 characters;
 * - `urlsafe_b64decode` turns `-`/`_` back, drops any other character outside the alphabet
 *   (non-strict `binascii.a2b_base64`), and REQUIRES the padding: data of 2 or 3 characters
 *   past a multiple of 4 without enough `=` is "Incorrect padding".
 */

/** Python's `base64.urlsafe_b64encode(data).decode()`. */
export function pythonUrlsafeB64encode(data: Uint8Array): string {
  return Buffer.from(data).toString("base64").replaceAll("+", "-").replaceAll("/", "_");
}

/** Python's `binascii.Error`. */
export class PythonBase64Error extends Error {
  override readonly name = "PythonBase64Error";
}

/** Python's `base64.urlsafe_b64decode(text)`; throws where Python raises `binascii.Error`. */
export function pythonUrlsafeB64decode(text: string): Buffer {
  const standard = text.replaceAll("-", "+").replaceAll("_", "/");
  const padAt = standard.indexOf("=");
  const data = (padAt < 0 ? standard : standard.slice(0, padAt)).replace(/[^A-Za-z0-9+/]/g, "");
  const pads = padAt < 0 ? 0 : standard.slice(padAt).replace(/[^=]/g, "").length;
  const partial = data.length % 4;
  if (partial === 1) {
    throw new PythonBase64Error(
      `Invalid base64-encoded string: number of data characters (${data.length}) cannot be 1 more than a multiple of 4`,
    );
  }
  if (partial !== 0 && pads < 4 - partial) throw new PythonBase64Error("Incorrect padding");
  return Buffer.from(data, "base64");
}
