/**
 * `did:key` for Ed25519 (multicodec 0xed01), decoded exactly as the reference does:
 * base58btc as one big integer, one zero byte per leading `1`, then 34 bytes that
 * start with `ed 01`. Anything else is not a key.
 */
import { codedErrorClass } from "../coded-error.js";

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i;
const PREFIX = "did:key:z";

/**
 * Every Ed25519 did:key spells its 34 bytes (`ed 01` + key) with exactly this many base58
 * digits: `0xed01 << 256` needs 47, and the largest such value still fits in 47. Fewer digits
 * make a smaller number, more make a larger one, and a leading `1` makes a zero first byte,
 * so a text of any other length decodes to something that is not a key. Checking the length
 * first refuses a megabyte-long "key" in O(1), with the result the full decoding would give.
 */
export const ED25519_DID_KEY_DIGITS = 47;

/** The longest base58 text `base58Decode` takes: its cost grows with the square of the length. */
export const MAX_BASE58_DIGITS = 1024;

export type DidKeyErrorCode = "bad_did_key";
export class DidKeyError extends codedErrorClass<DidKeyErrorCode>("bad_did_key") {
  override readonly name = "DidKeyError";
}

/**
 * base58btc as the reference reads it: one big-endian number, one zero byte per leading `1`.
 * Digit by digit into a byte array (no BigInt, whose per-digit multiply made long inputs
 * cost seconds); texts longer than `MAX_BASE58_DIGITS` are refused before any work.
 */
export function base58Decode(text: string): Buffer {
  if (text.length > MAX_BASE58_DIGITS) throw new DidKeyError("base58 text too long");
  let leadingOnes = 0;
  while (leadingOnes < text.length && text[leadingOnes] === "1") leadingOnes++;
  // Little-endian bytes of the number; ceil(digits × log(58)/log(256)) always suffice.
  const bytes = new Uint8Array(Math.ceil((text.length * 733) / 1000) + 1);
  let used = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const digit = code < 128 ? DIGIT[code]! : -1;
    // A lone surrogate or any other character: what the reference's `str.index` raises.
    if (digit < 0) throw new DidKeyError("substring not found");
    let carry = digit;
    for (let j = 0; j < used; j++) {
      carry += bytes[j]! * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes[used++] = carry & 0xff;
      carry >>= 8;
    }
  }
  const out = Buffer.alloc(leadingOnes + used);
  for (let j = 0; j < used; j++) out[leadingOnes + j] = bytes[used - 1 - j]!;
  return out;
}

export function base58Encode(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return out;
}

/** The 32-byte Ed25519 public key named by `did`, or a `DidKeyError`. */
export function didKeyToPublicKey(did: string): Buffer {
  if (!did.startsWith(PREFIX)) throw new DidKeyError("not a did:key");
  if (did.length !== PREFIX.length + ED25519_DID_KEY_DIGITS) {
    throw new DidKeyError("not an Ed25519 did:key");
  }
  const raw = base58Decode(did.slice(PREFIX.length));
  if (raw.length !== 34 || raw[0] !== 0xed || raw[1] !== 0x01) {
    throw new DidKeyError("not an Ed25519 did:key");
  }
  return raw.subarray(2);
}

export function publicKeyToDidKey(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new DidKeyError("Ed25519 public keys are 32 bytes");
  return PREFIX + base58Encode(Buffer.concat([Buffer.from([0xed, 0x01]), publicKey]));
}
