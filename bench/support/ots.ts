/**
 * Small detached OpenTimestamps proofs for tests (protocols.md §4.1): a pending proof for any
 * digest, and its "upgrade" carrying a Bitcoin attestation as well (the corpus has no such
 * pair), so tests can host as many distinct valid proofs as they need.
 */
import { createHash, randomBytes } from "node:crypto";

const MAGIC = Buffer.from("004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294", "hex");
const VERSION = 0x01;
const SHA256 = 0x08;
const FORK = 0xff;
const ATTESTATION = 0x00;
const PENDING_TAG = Buffer.from("83dfe30d2ef90c8e", "hex");
const BITCOIN_TAG = Buffer.from("0588960d73d71901", "hex");

export const CALENDAR = "https://alice.btc.calendar.opentimestamps.org";

function varuint(value: number): Buffer {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return Buffer.from(out);
}

function varbytes(bytes: Uint8Array): Buffer {
  return Buffer.concat([varuint(bytes.length), bytes]);
}

function pendingLeaf(calendar: string): Buffer {
  const payload = varbytes(Buffer.from(calendar, "utf8"));
  return Buffer.concat([Buffer.of(ATTESTATION), PENDING_TAG, varbytes(payload)]);
}

function bitcoinLeaf(height: number): Buffer {
  return Buffer.concat([Buffer.of(ATTESTATION), BITCOIN_TAG, varbytes(varuint(height))]);
}

function proof(digest: Uint8Array, tree: Buffer): Buffer {
  return Buffer.concat([MAGIC, Buffer.of(VERSION, SHA256), digest, tree]);
}

export function sha256(data: Uint8Array | string): Buffer {
  return createHash("sha256").update(data).digest();
}

export interface ProofShape {
  /** One pending attestation per calendar, in this order. */
  calendars?: string[];
  /** A Bitcoin attestation at this height on SHA-256 of the digest, after the pending ones. */
  bitcoinHeight?: number;
}

/** A proof for `digest` (32 bytes): by default one pending calendar attestation. */
export function otsProof(digest: Uint8Array, shape: ProofShape = {}): Buffer {
  const branches = (shape.calendars ?? [CALENDAR]).map(pendingLeaf);
  if (shape.bitcoinHeight !== undefined) {
    branches.push(Buffer.concat([Buffer.of(SHA256), bitcoinLeaf(shape.bitcoinHeight)]));
  }
  // Every branch but the last is announced by a fork marker.
  const tree = branches.flatMap((branch, index) =>
    index < branches.length - 1 ? [Buffer.of(FORK), branch] : [branch],
  );
  return proof(digest, Buffer.concat(tree));
}

/** A proof for `digest` holding one pending calendar attestation. */
export function pendingProof(digest: Uint8Array): Buffer {
  return otsProof(digest);
}

/** The same proof after an upgrade: the pending attestation plus a Bitcoin one (two in all). */
export function upgradedProof(digest: Uint8Array, height = 358391): Buffer {
  return otsProof(digest, { bitcoinHeight: height });
}

/**
 * A proof of `count` attestations of an unknown kind, `size` random bytes each: the largest
 * anchors a client can post (issue 34's attack used 97 of 8,000 bytes, a 1.04 MB body).
 */
export function largeProof(digest: Uint8Array, count = 97, size = 8000): Buffer {
  const leaf = () =>
    Buffer.concat([Buffer.of(ATTESTATION), randomBytes(8), varbytes(randomBytes(size))]);
  const tree = Array.from({ length: count }, (_, index) =>
    index < count - 1 ? Buffer.concat([Buffer.of(FORK), leaf()]) : leaf(),
  );
  return proof(digest, Buffer.concat(tree));
}

/** An 80-byte block header whose merkle root field holds `merkleRoot`. */
export function headerWith(merkleRoot: Uint8Array, time = 1_700_000_000): Buffer {
  const header = Buffer.alloc(80, 0x11);
  Buffer.from(merkleRoot).copy(header, 36);
  header.writeUInt32LE(time, 68);
  return header;
}
