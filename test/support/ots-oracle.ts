/**
 * An independent model of the reference's `.ots` verification (verifier.md §8), written from
 * the spec text only, as the oracle of the OpenTimestamps differential tests. It shares no
 * code with src/verifier/anchor and is deliberately plain: a recursive descent over an index,
 * exact BigInt varuints, and one rule for every read — a read that needs k bytes fails with
 * `truncated` when fewer than k remain, and only then is the value looked at (§8.1 step 8:
 * "reads past the end of input → truncated"; the header is read whole before it is compared).
 *
 * Where the spec does not pin an order, the choices are the plainest reading of its text:
 * - a varuint is at most 10 bytes: after a 10th byte that still has its continuation bit the
 *   answer is `invalid_varuint`, without reading an 11th byte;
 * - a varbytes length is checked against its bounds before its bytes are read (the length
 *   is what tells how many bytes there are to read);
 * - a node is counted when its tag is handled, before its argument or payload is read;
 *   the depth check runs when an operation's result is descended into.
 * The differential inputs (fixtures cut or grown by a byte, short and random inputs) never
 * come near the node or depth limits, so the last choice does not weigh on their answers.
 */
import { createHash } from "node:crypto";

export type OracleAttestation =
  | { kind: "pending"; value: string }
  | { kind: "bitcoin" | "litecoin"; value: number | bigint }
  | { kind: "unknown"; tag: string; payload: string };

export interface OracleResult {
  status: "verified" | "unverified" | "mismatch" | "invalid";
  code: string;
  file_digest: string;
  attestations: OracleAttestation[];
  /** The block height that confirmed the proof, when verified. */
  confirmedHeight?: number | bigint;
}

const HEADER_MAGIC = Buffer.from(
  "004F70656E54696D657374616D7073000050726F6F6600BF89E2E884E89294",
  "hex",
);
const FILE_HASHES: Record<number, [string, number]> = {
  2: ["sha1", 20],
  3: ["ripemd160", 20],
  8: ["sha256", 32],
};
const LIMIT_MESSAGE = 4096;
const LIMIT_RESULT = 4096;
const LIMIT_DEPTH = 256;
const LIMIT_NODES = 10_000;

class Failure extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

/** A cursor whose every read is all-or-`truncated`. */
class Input {
  private at = 0;
  constructor(private readonly data: Uint8Array) {}

  take(count: number): Uint8Array {
    if (this.data.length - this.at < count) throw new Failure("truncated");
    const out = this.data.slice(this.at, this.at + count);
    this.at += count;
    return out;
  }

  byte(): number {
    return this.take(1)[0] as number;
  }

  atEnd(): boolean {
    return this.at === this.data.length;
  }

  varuint(): bigint {
    let value = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      const b = this.byte();
      value |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return value;
    }
    throw new Failure("invalid_varuint");
  }

  varbytes(min: number, max: number): Uint8Array {
    const length = this.varuint();
    if (length < BigInt(min) || length > BigInt(max)) throw new Failure("invalid_length");
    return this.take(Number(length));
  }
}

function digestOf(algorithm: string, message: Uint8Array): Uint8Array {
  return createHash(algorithm).update(message).digest();
}

function run(op: (input: Uint8Array) => Uint8Array, message: Uint8Array): Uint8Array {
  if (message.length > LIMIT_MESSAGE) throw new Failure("message_too_long");
  const out = op(message);
  if (out.length === 0 || out.length > LIMIT_RESULT) throw new Failure("invalid_result");
  return out;
}

function height(value: bigint): number | bigint {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

function attestation(input: Input): OracleAttestation {
  const tag = Buffer.from(input.take(8)).toString("hex");
  const payloadBytes = input.varbytes(0, 8192);
  const payload = new Input(payloadBytes);
  if (tag === "83dfe30d2ef90c8e") {
    const uri = payload.varbytes(0, 1000);
    if (!payload.atEnd()) throw new Failure("trailing_data");
    return { kind: "pending", value: Buffer.from(uri).toString("utf8") };
  }
  if (tag === "0588960d73d71901" || tag === "06869a0d73d71b45") {
    const value = payload.varuint();
    if (!payload.atEnd()) throw new Failure("trailing_data");
    return { kind: tag.startsWith("05") ? "bitcoin" : "litecoin", value: height(value) };
  }
  return { kind: "unknown", tag, payload: Buffer.from(payloadBytes).toString("hex") };
}

interface Leaf {
  attestation: OracleAttestation;
  message: Uint8Array;
}

interface Walk {
  input: Input;
  leaves: Leaf[];
  nodes: number;
}

function timestamp(walk: Walk, message: Uint8Array, depth: number): void {
  let tag = walk.input.byte();
  while (tag === 0xff) {
    branch(walk, walk.input.byte(), message, depth);
    tag = walk.input.byte();
  }
  branch(walk, tag, message, depth);
}

function branch(walk: Walk, tag: number, message: Uint8Array, depth: number): void {
  walk.nodes += 1;
  if (walk.nodes > LIMIT_NODES) throw new Failure("too_many_nodes");
  let result: Uint8Array;
  if (tag === 0x00) {
    walk.leaves.push({ attestation: attestation(walk.input), message });
    return;
  } else if (tag === 0x67) {
    throw new Failure("unsupported_op");
  } else if (tag in FILE_HASHES) {
    const [algorithm] = FILE_HASHES[tag] as [string, number];
    result = run((m) => digestOf(algorithm, m), message);
  } else if (tag === 0xf0) {
    const suffix = walk.input.varbytes(1, 4096);
    result = run((m) => Buffer.concat([m, suffix]), message);
  } else if (tag === 0xf1) {
    const prefix = walk.input.varbytes(1, 4096);
    result = run((m) => Buffer.concat([prefix, m]), message);
  } else if (tag === 0xf2) {
    result = run((m) => Buffer.from(m).reverse(), message);
  } else if (tag === 0xf3) {
    result = run((m) => Buffer.from(Buffer.from(m).toString("hex"), "latin1"), message);
  } else {
    throw new Failure("unknown_op");
  }
  if (depth + 1 > LIMIT_DEPTH) throw new Failure("recursion_limit");
  timestamp(walk, result, depth + 1);
}

interface Parsed {
  op: string;
  digest: Uint8Array;
  leaves: Leaf[];
}

function parse(data: Uint8Array): Parsed {
  const input = new Input(data);
  if (!Buffer.from(input.take(HEADER_MAGIC.length)).equals(HEADER_MAGIC)) {
    throw new Failure("bad_magic");
  }
  if (input.byte() !== 1) throw new Failure("unsupported_version");
  const fileHash = FILE_HASHES[input.byte()];
  if (fileHash === undefined) throw new Failure("unknown_op");
  const [op, size] = fileHash;
  const digest = input.take(size);
  const walk: Walk = { input, leaves: [], nodes: 0 };
  timestamp(walk, digest, 0);
  if (!input.atEnd()) throw new Failure("trailing_data");
  return { op, digest, leaves: walk.leaves };
}

/** The parse code for `data`, or null when it parses. */
export function oracleParseCode(data: Uint8Array): string | null {
  try {
    parse(data);
    return null;
  } catch (error) {
    if (error instanceof Failure) return error.code;
    throw error;
  }
}

/**
 * `verify_proof` (§8.4) for an expected digest given as raw bytes and 80-byte headers by
 * height (both already valid: the differential is about proofs, not about digest spellings).
 */
export function oracleVerify(
  data: Uint8Array,
  expected: Uint8Array,
  headers: Map<number | bigint, Uint8Array> = new Map(),
): OracleResult {
  let parsed: Parsed;
  try {
    parsed = parse(data);
  } catch (error) {
    if (!(error instanceof Failure)) throw error;
    return { status: "invalid", code: error.code, file_digest: "", attestations: [] };
  }
  const file_digest = `${parsed.op}:${Buffer.from(parsed.digest).toString("hex")}`;
  const attestations = parsed.leaves.map((leaf) => leaf.attestation);
  const answer = (status: OracleResult["status"], code: string): OracleResult => ({
    status,
    code,
    file_digest,
    attestations,
  });
  if (!Buffer.from(parsed.digest).equals(expected)) return answer("mismatch", "digest_mismatch");
  const bitcoin = parsed.leaves.filter((leaf) => leaf.attestation.kind === "bitcoin");
  for (const leaf of bitcoin) {
    const at = leaf.attestation.kind === "bitcoin" ? leaf.attestation.value : -1;
    const header = headers.get(at);
    if (header !== undefined && Buffer.from(header.subarray(36, 68)).equals(leaf.message)) {
      return { ...answer("verified", "anchor_verified"), confirmedHeight: at };
    }
  }
  const kinds = new Set(attestations.map((a) => a.kind));
  if (bitcoin.length > 0) {
    return headers.size > 0
      ? answer("mismatch", "header_mismatch")
      : answer("unverified", "anchor_unverified");
  }
  if (kinds.has("pending")) return answer("unverified", "anchor_pending");
  if (kinds.has("litecoin")) return answer("unverified", "anchor_unverified");
  if (kinds.has("unknown")) return answer("unverified", "anchor_unknown_type");
  return answer("invalid", "anchor_empty");
}
