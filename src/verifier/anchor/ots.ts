/**
 * Parser for detached OpenTimestamps proofs (`.ots`), verifier.md §8.1–§8.3.
 *
 * Every operation is replayed while the proof is read, so each leaf carries the exact
 * message its attestation commits to and every size limit applies to real values.
 * The tree is walked with an explicit stack: a hostile proof can nest only `MAX_DEPTH`
 * operations and hold only `MAX_NODES` nodes, and never touches the JS call stack.
 *
 * Pure: no I/O, no clock; hashing goes through the crypto interface (`crypto/provider.ts`).
 */

import { CodedError } from "../coded-error.js";
import { verifierCrypto } from "../crypto/provider.js";
import { normalizeInteger } from "../json/value.js";

export const MAX_MESSAGE_BYTES = 4096;
export const MAX_RESULT_BYTES = 4096;
export const MAX_DEPTH = 256;
export const MAX_NODES = 10_000;
export const MAX_ATTESTATION_PAYLOAD_BYTES = 8192;
export const MAX_PENDING_URI_BYTES = 1000;
export const MAX_OP_ARGUMENT_BYTES = 4096;
const MAX_VARUINT_BYTES = 10;

/** `\0OpenTimestamps\0\0Proof\0` followed by the format's 8 binary magic bytes. */
const MAGIC = Buffer.from("004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294", "hex");
const SUPPORTED_MAJOR_VERSION = 1;

const ATTESTATION_TAG_BYTES = 8;
const PENDING_TAG = "83dfe30d2ef90c8e";
const BITCOIN_TAG = "0588960d73d71901";
const LITECOIN_TAG = "06869a0d73d71b45";

const TAG_ATTESTATION = 0x00;
const TAG_FORK = 0xff;
const TAG_KECCAK256 = 0x67;
const TAG_APPEND = 0xf0;
const TAG_PREPEND = 0xf1;
const TAG_REVERSE = 0xf2;
const TAG_HEXLIFY = 0xf3;

export type HashAlgorithm = "sha1" | "ripemd160" | "sha256";

const HASH_BY_TAG = new Map<number, { algorithm: HashAlgorithm; digestBytes: number }>([
  [0x02, { algorithm: "sha1", digestBytes: 20 }],
  [0x03, { algorithm: "ripemd160", digestBytes: 20 }],
  [0x08, { algorithm: "sha256", digestBytes: 32 }],
]);

export type AnchorProofErrorCode =
  | "bad_magic"
  | "unsupported_version"
  | "unknown_op"
  | "unsupported_op"
  | "truncated"
  | "invalid_varuint"
  | "invalid_length"
  | "trailing_data"
  | "message_too_long"
  | "invalid_result"
  | "recursion_limit"
  | "too_many_nodes";

/** A proof the parser refuses; `code` is stable and reported verbatim by `verifyProof`. */
export class AnchorProofError extends CodedError<AnchorProofErrorCode> {
  override readonly name = "AnchorProofError";
}

/** An attestation as the result object reports it (verifier.md §8.2). */
export type Attestation =
  | { kind: "pending"; value: string }
  /** Heights are exact: beyond 2^53 - 1 (a hostile proof's) they are bigints. */
  | { kind: "bitcoin" | "litecoin"; value: number | bigint }
  | { kind: "unknown"; tag: string; payload: string };

export interface ProofLeaf {
  attestation: Attestation;
  /** The message reached at this attestation, i.e. what the notary committed to. */
  message: Uint8Array;
}

export interface ParsedProof {
  fileHashOp: HashAlgorithm;
  fileDigest: Uint8Array;
  /** Every attestation in the order it appears in the proof. */
  leaves: ProofLeaf[];
}

export type Operation =
  | { kind: "hash"; algorithm: HashAlgorithm }
  | { kind: "append"; argument: Uint8Array }
  | { kind: "prepend"; argument: Uint8Array }
  | { kind: "reverse" }
  | { kind: "hexlify" };

function tagHex(tag: number): string {
  return `0x${tag.toString(16).padStart(2, "0")}`;
}

function hashBytes(algorithm: HashAlgorithm, message: Uint8Array): Uint8Array {
  try {
    return verifierCrypto().digest(algorithm, message);
  } catch {
    // ripemd160 depends on the host's OpenSSL build; the spec maps its absence to this code.
    throw new AnchorProofError("unsupported_op", `${algorithm} is not available on this host`);
  }
}

function computeResult(operation: Operation, message: Uint8Array): Uint8Array {
  switch (operation.kind) {
    case "hash":
      return hashBytes(operation.algorithm, message);
    case "append":
      return Buffer.concat([message, operation.argument]);
    case "prepend":
      return Buffer.concat([operation.argument, message]);
    case "reverse":
      return Uint8Array.from(message).reverse();
    case "hexlify":
      return Buffer.from(Buffer.from(message).toString("hex"), "ascii");
  }
}

/**
 * Applies one operation with the limits of §8.3. Within a parse every input is the file
 * digest or an earlier result, so results capped at the same size keep `message_too_long`
 * out of reach there; the check guards callers that replay operations themselves.
 */
export function applyOperation(operation: Operation, message: Uint8Array): Uint8Array {
  if (message.length > MAX_MESSAGE_BYTES) {
    throw new AnchorProofError(
      "message_too_long",
      `${operation.kind} input is ${message.length} bytes (limit ${MAX_MESSAGE_BYTES})`,
    );
  }
  const result = computeResult(operation, message);
  if (result.length === 0 || result.length > MAX_RESULT_BYTES) {
    throw new AnchorProofError(
      "invalid_result",
      `${operation.kind} result is ${result.length} bytes (must be 1..${MAX_RESULT_BYTES})`,
    );
  }
  return result;
}

/** Bounds-checked cursor; `context` names the region in error details. */
class ByteReader {
  private offset = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly context: string,
  ) {}

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  readBytes(count: number, what: string): Uint8Array {
    if (count > this.remaining) {
      throw new AnchorProofError(
        "truncated",
        `${this.context} ends while reading ${what} (${count} bytes needed, ${this.remaining} left)`,
      );
    }
    const start = this.offset;
    this.offset += count;
    return this.bytes.subarray(start, this.offset);
  }

  readByte(what: string): number {
    return this.readBytes(1, what)[0]!;
  }

  /**
   * Unsigned LEB128 of at most 10 bytes, exact: a safe integer as a number, a larger one
   * (up to 2^70 - 1) as a bigint. The value is only judged by its users, after every byte
   * of it was read, so a varuint cut short is `truncated` whatever it holds so far, and a
   * length beyond 2^53 is `invalid_length` like any other length over its maximum.
   */
  readVaruint(what: string): number | bigint {
    let value = 0n;
    for (let index = 0; index < MAX_VARUINT_BYTES; index++) {
      const byte = this.readByte(what);
      value |= BigInt(byte & 0x7f) << BigInt(7 * index);
      if ((byte & 0x80) === 0) return normalizeInteger(value);
    }
    throw new AnchorProofError(
      "invalid_varuint",
      `${what} is longer than ${MAX_VARUINT_BYTES} bytes`,
    );
  }

  readVarbytes(what: string, minBytes: number, maxBytes: number): Uint8Array {
    const length = this.readVaruint(`${what} length`);
    if (length < minBytes || length > maxBytes) {
      throw new AnchorProofError(
        "invalid_length",
        `${what} is ${length} bytes (must be ${minBytes}..${maxBytes})`,
      );
    }
    return this.readBytes(Number(length), what);
  }

  expectEnd(after: string): void {
    if (this.remaining > 0) {
      throw new AnchorProofError(
        "trailing_data",
        `${this.remaining} unexpected bytes in ${this.context} after ${after}`,
      );
    }
  }
}

const utf8WithReplacement = new TextDecoder("utf-8", { ignoreBOM: true });

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

function readAttestation(reader: ByteReader): Attestation {
  const tag = hex(reader.readBytes(ATTESTATION_TAG_BYTES, "attestation tag"));
  const payload = reader.readVarbytes("attestation payload", 0, MAX_ATTESTATION_PAYLOAD_BYTES);
  switch (tag) {
    case PENDING_TAG: {
      const payloadReader = new ByteReader(payload, "pending attestation payload");
      const uri = payloadReader.readVarbytes("calendar URI", 0, MAX_PENDING_URI_BYTES);
      payloadReader.expectEnd("the calendar URI");
      return { kind: "pending", value: utf8WithReplacement.decode(uri) };
    }
    case BITCOIN_TAG:
    case LITECOIN_TAG: {
      const kind = tag === BITCOIN_TAG ? "bitcoin" : "litecoin";
      const payloadReader = new ByteReader(payload, `${kind} attestation payload`);
      const height = payloadReader.readVaruint("block height");
      payloadReader.expectEnd("the block height");
      return { kind, value: height };
    }
    default:
      return { kind: "unknown", tag, payload: hex(payload) };
  }
}

function readOperation(reader: ByteReader, tag: number): Operation {
  const hashOp = HASH_BY_TAG.get(tag);
  if (hashOp !== undefined) return { kind: "hash", algorithm: hashOp.algorithm };
  switch (tag) {
    case TAG_APPEND:
      return {
        kind: "append",
        argument: reader.readVarbytes("append argument", 1, MAX_OP_ARGUMENT_BYTES),
      };
    case TAG_PREPEND:
      return {
        kind: "prepend",
        argument: reader.readVarbytes("prepend argument", 1, MAX_OP_ARGUMENT_BYTES),
      };
    case TAG_REVERSE:
      return { kind: "reverse" };
    case TAG_HEXLIFY:
      return { kind: "hexlify" };
    case TAG_KECCAK256:
      throw new AnchorProofError("unsupported_op", "keccak256 (0x67) is not supported");
    default:
      throw new AnchorProofError("unknown_op", `unknown operation tag ${tagHex(tag)}`);
  }
}

/** A timestamp (tree node) being read: the message its branches start from. */
interface TimestampFrame {
  message: Uint8Array;
  depth: number;
}

/**
 * Reads the timestamp tree `(0xff branch)* branch` without recursion. `forked` holds the
 * ancestors that announced another branch with 0xff; when a branch ends in an attestation,
 * reading resumes at the nearest of them, exactly where the recursive grammar would.
 */
function readTimestampTree(reader: ByteReader, fileDigest: Uint8Array): ProofLeaf[] {
  const leaves: ProofLeaf[] = [];
  const forked: TimestampFrame[] = [];
  let nodeCount = 0;
  let current: TimestampFrame | undefined = { message: fileDigest, depth: 0 };
  while (current !== undefined) {
    let tag = reader.readByte("an operation tag");
    if (tag === TAG_FORK) {
      forked.push(current);
      tag = reader.readByte("an operation tag");
    }
    nodeCount += 1;
    if (nodeCount > MAX_NODES) {
      throw new AnchorProofError("too_many_nodes", `proof has more than ${MAX_NODES} nodes`);
    }
    if (tag === TAG_ATTESTATION) {
      leaves.push({ attestation: readAttestation(reader), message: current.message });
      current = forked.pop();
      continue;
    }
    const result = applyOperation(readOperation(reader, tag), current.message);
    const depth = current.depth + 1;
    if (depth > MAX_DEPTH) {
      throw new AnchorProofError(
        "recursion_limit",
        `operations nest deeper than ${MAX_DEPTH} levels`,
      );
    }
    current = { message: result, depth };
  }
  return leaves;
}

/** Parses a detached `.ots` proof, replaying every operation; throws `AnchorProofError`. */
export function parseOtsProof(proof: Uint8Array): ParsedProof {
  // The header is read whole before it is compared, as every read is: a file shorter than
  // the magic is `truncated` whatever its bytes, `bad_magic` needs all 31 of them.
  const reader = new ByteReader(proof, "proof");
  const magic = reader.readBytes(MAGIC.length, "the header magic");
  if (!MAGIC.equals(magic)) {
    throw new AnchorProofError("bad_magic", "not a detached OpenTimestamps proof");
  }
  const version = reader.readByte("the major version");
  if (version !== SUPPORTED_MAJOR_VERSION) {
    throw new AnchorProofError(
      "unsupported_version",
      `major version ${version} (only ${SUPPORTED_MAJOR_VERSION} is supported)`,
    );
  }
  const fileHashTag = reader.readByte("the file hash op");
  const fileHash = HASH_BY_TAG.get(fileHashTag);
  if (fileHash === undefined) {
    throw new AnchorProofError("unknown_op", `unsupported file hash op ${tagHex(fileHashTag)}`);
  }
  const fileDigest = Uint8Array.from(reader.readBytes(fileHash.digestBytes, "the file digest"));
  const leaves = readTimestampTree(reader, fileDigest);
  reader.expectEnd("the timestamp tree");
  return { fileHashOp: fileHash.algorithm, fileDigest, leaves };
}
