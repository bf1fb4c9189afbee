/**
 * Base64 decoding with Python's semantics.
 *
 * Signature values are decoded by the reference as
 * `base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))`: both alphabets are accepted,
 * characters outside the alphabet are skipped, and the padding rules of CPython's
 * non-strict `binascii.a2b_base64` decide what is an error. Reproducing that loop
 * exactly keeps "signature does not verify" decisions identical for junk input.
 */
import { codedErrorClass } from "../coded-error.js";

const DECODE = new Int16Array(256).fill(-1);
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".split("").forEach((ch, i) => {
  DECODE[ch.charCodeAt(0)] = i;
});

export type Base64ErrorCode = "bad_base64";
export class Base64Error extends codedErrorClass<Base64ErrorCode>("bad_base64") {
  override readonly name = "Base64Error";
}

/** CPython `binascii.a2b_base64(data, strict_mode=False)`. */
export function a2bBase64(ascii: Uint8Array | string): Buffer {
  const length = ascii.length;
  const at =
    typeof ascii === "string" ? (i: number) => ascii.charCodeAt(i) : (i: number) => ascii[i]!;
  const out = Buffer.allocUnsafe(Math.ceil(length / 4) * 3);
  let written = 0;
  let quadPos = 0;
  let leftChar = 0;
  let pads = 0;
  for (let i = 0; i < length; i++) {
    const ch = at(i);
    if (ch === 0x3d) {
      if (quadPos >= 2 && quadPos + ++pads >= 4) return out.subarray(0, written);
      continue;
    }
    const v = ch < 256 ? DECODE[ch]! : -1;
    if (v < 0) continue;
    pads = 0;
    switch (quadPos) {
      case 0:
        quadPos = 1;
        leftChar = v;
        break;
      case 1:
        quadPos = 2;
        out[written++] = ((leftChar << 2) | (v >> 4)) & 0xff;
        leftChar = v & 0x0f;
        break;
      case 2:
        quadPos = 3;
        out[written++] = ((leftChar << 4) | (v >> 2)) & 0xff;
        leftChar = v & 0x03;
        break;
      default:
        quadPos = 0;
        out[written++] = ((leftChar << 6) | v) & 0xff;
        leftChar = 0;
    }
  }
  if (quadPos === 1) {
    throw new Base64Error(
      `Invalid base64-encoded string: number of data characters (${Math.floor(written / 3) * 4 + 1}) cannot be 1 more than a multiple of 4`,
    );
  }
  if (quadPos !== 0) throw new Base64Error("Incorrect padding");
  return out.subarray(0, written);
}

const CLEAN_BASE64URL = /^[A-Za-z0-9_-]*$/;

/** The reference's `b64u_decode`: pad, map `-_` to `+/`, decode non-strictly. */
export function pyB64uDecode(value: string): Buffer {
  // Clean unpadded base64url (every signature we see) decodes the same natively.
  if (value.length % 4 !== 1 && CLEAN_BASE64URL.test(value)) return Buffer.from(value, "base64url");
  if (!/^[\x00-\x7f]*$/.test(value)) {
    throw new Base64Error("string argument should contain only ASCII characters");
  }
  const padded = value + "=".repeat((4 - (value.length % 4)) % 4);
  return a2bBase64(padded.replaceAll("-", "+").replaceAll("_", "/"));
}

/** base64url without padding, the encoding of every signature we produce. */
export function b64uEncode(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url");
}
