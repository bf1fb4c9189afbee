/**
 * `did:key` for Ed25519 (multicodec 0xed01), decoded exactly as the reference does:
 * base58btc as one big integer, one zero byte per leading `1`, then 34 bytes that
 * start with `ed 01`. Anything else is not a key.
 */
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const ALPHABET_INDEX = new Map([...ALPHABET].map((ch, i) => [ch, BigInt(i)]));
const PREFIX = "did:key:z";

export class DidKeyError extends Error {
  override readonly name = "DidKeyError";
}

export function base58Decode(text: string): Buffer {
  let n = 0n;
  for (const ch of text) {
    const digit = ALPHABET_INDEX.get(ch);
    if (digit === undefined) throw new DidKeyError("substring not found");
    n = n * 58n + digit;
  }
  let hex = n === 0n ? "" : n.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let leadingOnes = 0;
  while (leadingOnes < text.length && text[leadingOnes] === "1") leadingOnes++;
  return Buffer.concat([Buffer.alloc(leadingOnes), Buffer.from(hex, "hex")]);
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
