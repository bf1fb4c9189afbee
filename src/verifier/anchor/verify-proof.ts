/**
 * `verify_proof(data, expected_digest, block_headers)`, verifier.md §8.4.
 *
 * Checks are run in the spec's order and the first that decides the outcome wins.
 * A Bitcoin attestation counts as verified when the message it commits to equals the
 * merkle root of a caller-supplied header. Nothing else about the header is checked:
 * no proof-of-work, no chain, no confirmation depth. The details say so, so that a
 * `verified` result is never read as more than it is.
 */
import {
  AnchorProofError,
  type AnchorProofErrorCode,
  type Attestation,
  type ParsedProof,
  parseOtsProof,
} from "./ots.js";

export type AnchorStatus = "verified" | "unverified" | "mismatch" | "invalid";

export type AnchorCode =
  | AnchorProofErrorCode
  | "bad_digest"
  | "bad_header"
  | "digest_mismatch"
  | "header_mismatch"
  | "anchor_verified"
  | "anchor_unverified"
  | "anchor_pending"
  | "anchor_unknown_type"
  | "anchor_empty";

export interface AnchorConfirmation {
  /** A bigint only for a height beyond 2^53 - 1, as attestation heights are. */
  block_height: number | bigint;
  /** Hex of the merkle root in wire order (byte-reversed relative to block explorers). */
  merkle_root: string;
  /** The header's little-endian uint32 timestamp, in seconds since the epoch. */
  header_time: number;
}

export interface AnchorResult {
  status: AnchorStatus;
  code: AnchorCode;
  detail: string;
  /** `"<hash op>:<hex>"` once the proof has parsed, `""` before. */
  file_digest: string;
  attestations: Attestation[];
  /** Present only when `status` is `verified`. */
  confirmed?: AnchorConfirmation;
}

const HEADER_BYTES = 80;
const MERKLE_ROOT_START = 36;
const MERKLE_ROOT_END = 68;
const HEADER_TIME_OFFSET = 68;

const SCOPE_NOTE =
  "only merkle-root equality with the supplied headers was checked (no proof-of-work or header-chain validation)";

/** Python's `str.strip()` whitespace, so padded digests are accepted exactly as the reference accepts them. */
const PY_WHITESPACE = String.raw`[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]`;
const SURROUNDING_WHITESPACE = new RegExp(`^${PY_WHITESPACE}+|${PY_WHITESPACE}+$`, "g");
const HEX_BYTES = /^(?:[0-9a-fA-F]{2})+$/;

function decodeHex(text: string): Uint8Array | null {
  const trimmed = text.replace(SURROUNDING_WHITESPACE, "");
  return HEX_BYTES.test(trimmed) ? Buffer.from(trimmed, "hex") : null;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/** Raw bytes, or hex optionally prefixed with `sha256:` or `0x`; `null` when unusable. */
function normaliseExpectedDigest(expected: string | Uint8Array): Uint8Array | null {
  if (typeof expected !== "string") return expected;
  const trimmed = expected.replace(SURROUNDING_WHITESPACE, "");
  let hexDigits = trimmed;
  if (trimmed.startsWith("sha256:")) hexDigits = trimmed.slice("sha256:".length);
  else if (trimmed.startsWith("0x")) hexDigits = trimmed.slice("0x".length);
  return HEX_BYTES.test(hexDigits) ? Buffer.from(hexDigits, "hex") : null;
}

/**
 * Block headers by height. Keys follow the one-representation rule of the JSON value model
 * (a safe integer is a number, a larger one a bigint), so that they find the attestations'
 * heights, which follow it too.
 */
export type BlockHeaders = Map<number | bigint, string | Uint8Array>;

type HeaderCheck = { headers: Map<number | bigint, Uint8Array> } | { badHeader: string };

function decodeHeaders(headers: BlockHeaders): HeaderCheck {
  const decoded = new Map<number | bigint, Uint8Array>();
  for (const [height, header] of headers) {
    const bytes = typeof header === "string" ? decodeHex(header) : header;
    if (bytes === null) return { badHeader: `header for height ${height} is not hex` };
    if (bytes.length !== HEADER_BYTES) {
      return {
        badHeader: `header for height ${height} is ${bytes.length} bytes, expected ${HEADER_BYTES}`,
      };
    }
    decoded.set(height, bytes);
  }
  return { headers: decoded };
}

function headerTime(header: Uint8Array): number {
  return new DataView(header.buffer, header.byteOffset, header.byteLength).getUint32(
    HEADER_TIME_OFFSET,
    true,
  );
}

/** Checks that parsing succeeded, in §8.4 order from step 3 on. */
function judgeParsedProof(
  proof: ParsedProof,
  expectedDigest: Uint8Array,
  suppliedHeaders: BlockHeaders,
): AnchorResult {
  const file_digest = `${proof.fileHashOp}:${hex(proof.fileDigest)}`;
  const attestations = proof.leaves.map((leaf) => leaf.attestation);
  const result = (status: AnchorStatus, code: AnchorCode, detail: string): AnchorResult => ({
    status,
    code,
    detail,
    file_digest,
    attestations,
  });

  if (!bytesEqual(proof.fileDigest, expectedDigest)) {
    return result(
      "mismatch",
      "digest_mismatch",
      `proof is for ${file_digest}, expected digest is ${hex(expectedDigest)}`,
    );
  }

  const headerCheck = decodeHeaders(suppliedHeaders);
  if ("badHeader" in headerCheck) return result("invalid", "bad_header", headerCheck.badHeader);
  const { headers } = headerCheck;

  const bitcoinHeights: (number | bigint)[] = [];
  for (const leaf of proof.leaves) {
    if (leaf.attestation.kind !== "bitcoin") continue;
    const height = leaf.attestation.value;
    bitcoinHeights.push(height);
    const header = headers.get(height);
    if (header === undefined) continue;
    const merkleRoot = header.subarray(MERKLE_ROOT_START, MERKLE_ROOT_END);
    if (bytesEqual(leaf.message, merkleRoot)) {
      return {
        ...result(
          "verified",
          "anchor_verified",
          `bitcoin attestation matches the merkle root of the header at height ${height}; ${SCOPE_NOTE}`,
        ),
        confirmed: {
          block_height: height,
          merkle_root: hex(leaf.message),
          header_time: headerTime(header),
        },
      };
    }
  }

  const kinds = new Set(proof.leaves.map((leaf) => leaf.attestation.kind));
  if (bitcoinHeights.length > 0 && headers.size > 0) {
    return result(
      "mismatch",
      "header_mismatch",
      `no bitcoin attestation (heights ${bitcoinHeights.join(", ")}) matches the merkle root of a supplied header at its height; ${SCOPE_NOTE}`,
    );
  }
  if (bitcoinHeights.length > 0) {
    return result(
      "unverified",
      "anchor_unverified",
      `bitcoin attestation at heights ${bitcoinHeights.join(", ")} but no block headers were supplied`,
    );
  }
  if (kinds.has("pending")) {
    return result(
      "unverified",
      "anchor_pending",
      "no bitcoin attestation yet, only pending calendar attestations; upgrade the proof later",
    );
  }
  if (kinds.has("litecoin")) {
    return result(
      "unverified",
      "anchor_unverified",
      "no bitcoin attestation; litecoin attestations are not checked",
    );
  }
  if (kinds.has("unknown")) {
    return result(
      "unverified",
      "anchor_unknown_type",
      "only attestations of unknown types; nothing could be checked",
    );
  }
  // The grammar ends every branch in an attestation, so a proof that parsed always has a
  // leaf; this is the spec's last step, kept so the function is total.
  return result("invalid", "anchor_empty", "proof contains no attestations");
}

/**
 * Verifies a detached `.ots` proof against the digest it should commit to and optional
 * 80-byte Bitcoin block headers keyed by height (raw bytes or hex). Never throws for bad
 * input: every failure is reported as a result.
 */
export function verifyProof(
  proof: Uint8Array,
  expectedDigest: string | Uint8Array,
  headers: BlockHeaders = new Map(),
): AnchorResult {
  const expected = normaliseExpectedDigest(expectedDigest);
  if (expected === null) {
    return {
      status: "invalid",
      code: "bad_digest",
      detail: "expected digest must be raw bytes or hex, optionally prefixed with sha256: or 0x",
      file_digest: "",
      attestations: [],
    };
  }
  let parsed: ParsedProof;
  try {
    parsed = parseOtsProof(proof);
  } catch (error) {
    if (!(error instanceof AnchorProofError)) throw error;
    return {
      status: "invalid",
      code: error.code,
      detail: error.detail,
      file_digest: "",
      attestations: [],
    };
  }
  return judgeParsedProof(parsed, expected, headers);
}
