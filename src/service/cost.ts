/**
 * What a bundle verification will cost, counted before the expensive work (issue 32): the
 * worker parses the body strictly, counts here, and refuses before the first signature when
 * the count comes to more cap units than the main thread authorised. Pure and linear in the
 * parsed body, so both threads may load it (the main thread reads the unit's definition for
 * `/info` and the run-time charge).
 *
 * One **cap unit** buys the heaviest legitimate request the bench knows: a 1 MiB batch of 50
 * real bundles (`bench/scenarios.ts`, "large-bodies"), 1,250 receipts under 50 agents. Its
 * counts are the unit's figures (docs/cost-bounds.md, "What one unit buys"); a request is
 * charged as many units as its heaviest count needs, so a normal single bundle or batch stays
 * at one and a body built to be slow pays for what it makes a thread do.
 */
import { pyB64uDecode } from "../verifier/crypto/base64.js";
import { didKeyToPublicKey } from "../verifier/crypto/did-key.js";
import { isNonCanonicalEncoding, isSmallOrderEncoding } from "../verifier/crypto/edge-points.js";
import { OPENSSL_DECIDES_EDGES } from "../verifier/crypto/node.js";
import { verifierCrypto } from "../verifier/crypto/provider.js";
import { isArray, isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";

/** What a verification request asks a thread to do, counted from its parsed body. */
export interface CostCounts {
  /** Body bytes (each is parsed once). */
  bytes: number;
  receipts: number;
  /** Ed25519 signatures the verifier may check: receipt `sig`s and counterparty attestations. */
  signatures: number;
  /** Distinct did:keys those signatures name: each is one key import per thread. */
  distinctKeys: number;
  /**
   * Signatures whose R or whose key A is a small-order or non-canonical encoding: about an
   * ordinary check with libsodium (crypto/sodium-edges.ts) or OpenSSL 3.0, but noble's
   * step-by-step check with a table per distinct key where neither decides
   * (docs/cost-bounds.md).
   */
  edgePointSignatures: number;
  /** Distinct did:keys under which edge-point signatures are checked (noble: a table each). */
  edgePointKeys: number;
}

/**
 * What one cap unit buys, in the weights `weightOf` adds up. Derived from the 50-bundle 1 MiB
 * batch (1,250 signatures, 50 keys, 966,463 bytes: weight 2,244; docs/cost-bounds.md): the unit
 * is that request's weight with a third more headroom, so it and anything lighter are one unit.
 */
export const UNIT_WEIGHT = 3_000;

/**
 * Edge-point weights by who decides edge points. libsodium (`crypto/sodium-edges.ts`, every
 * Node line since issue 32) and OpenSSL 3.0 itself (Node 20) decide one at about the cost of an
 * ordinary check. Only where sodium-native does not load and the OpenSSL is later than 3.0
 * (Node 22, 24) does noble's step-by-step 3.0 check decide it: about 1 ms a signature plus about
 * 7 ms for the table of each key it is checked under.
 */
const EDGE_POINT_WEIGHTS = {
  libsodium_or_openssl_3_0: { signature: 1, key: 0 },
  noble_fallback: { signature: 15, key: 100 },
} as const;

/** The weights of the implementation verifying now (it is chosen at start, per thread). */
function edgeWeightsHere(): { signature: number; key: number } {
  const { id } = verifierCrypto();
  const cheap = id === "libsodium" || (id === "openssl" && OPENSSL_DECIDES_EDGES);
  return cheap ? EDGE_POINT_WEIGHTS.libsodium_or_openssl_3_0 : EDGE_POINT_WEIGHTS.noble_fallback;
}

/**
 * The weight of each counted thing, in ordinary signature checks (about 60 µs on libsodium):
 * measured side by side on one thread (docs/cost-bounds.md, "What one unit buys").
 */
export const COST_WEIGHTS = {
  signature: 1,
  /** A key import (SPKI or libsodium's checks) costs about one verification. */
  distinctKey: 1,
  /** An edge-point signature, and each distinct key one is checked under: `edgeWeightsHere`. */
  /** Strict parsing, canonical bytes and hashing of every body byte: 1 per 1,024 bytes. */
  kibibyte: 1,
} as const;

/**
 * CPU time one unit buys: a task cut by the deadline is charged by its run time at this rate
 * (the 50-bundle batch took about 0.2 s on one thread; the rate leaves it headroom).
 */
export const UNIT_CPU_MS = 250;

/**
 * The most units one request may be charged by its estimate: what the default work deadline
 * (`CPU_TASK_DEADLINE_MS`, 15 s) buys at `UNIT_CPU_MS`. A request estimated past it could not
 * finish in time anyway, so it is refused before the work.
 */
export const MAX_UNITS_PER_REQUEST = 60;

export function weightOf(counts: CostCounts): number {
  const edge = edgeWeightsHere();
  return (
    counts.signatures * COST_WEIGHTS.signature +
    counts.distinctKeys * COST_WEIGHTS.distinctKey +
    counts.edgePointSignatures * edge.signature +
    counts.edgePointKeys * edge.key +
    Math.ceil(counts.bytes / 1024) * COST_WEIGHTS.kibibyte
  );
}

/** The cap units a request of `counts` is charged: at least one. */
export function unitsOf(counts: CostCounts): number {
  return Math.max(1, Math.ceil(weightOf(counts) / UNIT_WEIGHT));
}

/** The units a task that ran `ranMs` on a thread is charged (a task cut by the deadline). */
export function unitsForRunTime(ranMs: number): number {
  return Math.max(1, Math.ceil(ranMs / UNIT_CPU_MS));
}

/**
 * A queue weight for the CPU pool's fair share, from what the main thread knows before any
 * parsing: the body's size. 1 for a small bundle; a 1 MiB body weighs about 64.
 */
export function queueWeightOfBody(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 16_384));
}

/** The receipts past which the verifier refuses a bundle before any signature (early-exits.ts). */
const MAX_RECEIPTS = 10_000;
/** Longer signature values are never 64 bytes on the fast path; they are counted, not decoded. */
const MAX_DECODED_SIGNATURE_CHARS = 128;

/** A counter of one request's cost as its bundles are walked. */
class CostCounter {
  receipts = 0;
  signatures = 0;
  edgePointSignatures = 0;
  readonly edgePointKeys = new Set<string>();
  /** did:key → whether its key is an edge point (null: not a key, no import succeeds). */
  readonly #keys = new Map<string, boolean | null>();

  get distinctKeys(): number {
    return this.#keys.size;
  }

  bundle(bundle: JsonValue): void {
    if (!isObject(bundle)) return;
    const receipts = bundle.get("receipts");
    if (!isArray(receipts) || receipts.length > MAX_RECEIPTS) return;
    for (const receipt of receipts) {
      if (!isObject(receipt)) continue;
      this.receipts++;
      const issuer = receipt.get("issuer");
      const id = isObject(issuer) ? issuer.get("id") : undefined;
      const sig = receipt.get("sig");
      if (isObject(sig) && typeof id === "string") this.#signature(id, sig.get("value"));
      const body = receipt.get("body");
      if (body !== undefined) this.#attestations(body);
    }
  }

  /** Counterparty attestations anywhere in a receipt's body: `{alg: "ed25519", key, value}`. */
  #attestations(value: JsonValue): void {
    const pending: JsonValue[] = [value];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (isArray(next)) {
        pending.push(...next);
      } else if (isObject(next)) {
        const key = next.get("key");
        if (next.get("alg") === "ed25519" && typeof key === "string") {
          this.#signature(key, next.get("value"));
        }
        for (const member of next.values()) if (typeof member === "object") pending.push(member);
      }
    }
  }

  #signature(did: string, value: JsonValue | undefined): void {
    if (typeof value !== "string") return;
    this.signatures++;
    const keyIsEdge = this.#keyIsEdge(did);
    if (keyIsEdge === null) return;
    if (keyIsEdge || rIsEdge(value)) {
      this.edgePointSignatures++;
      this.edgePointKeys.add(did);
    }
  }

  #keyIsEdge(did: string): boolean | null {
    const known = this.#keys.get(did);
    if (known !== undefined) return known;
    let edge: boolean | null;
    try {
      const key = didKeyToPublicKey(did);
      edge = isEdgeEncoding(key);
    } catch {
      edge = null;
    }
    this.#keys.set(did, edge);
    return edge;
  }
}

function isEdgeEncoding(bytes: Uint8Array): boolean {
  return bytes.length >= 32 && (isSmallOrderEncoding(bytes) || isNonCanonicalEncoding(bytes));
}

function rIsEdge(value: string): boolean {
  if (value.length > MAX_DECODED_SIGNATURE_CHARS) return false;
  try {
    const signature = pyB64uDecode(value);
    return signature.length === 64 && isEdgeEncoding(signature);
  } catch {
    return false;
  }
}

/** The counts of verifying `bundles`, from a body of `bytes`. */
export function countVerificationCost(bundles: readonly JsonValue[], bytes: number): CostCounts {
  const counter = new CostCounter();
  for (const bundle of bundles) counter.bundle(bundle);
  return {
    bytes,
    receipts: counter.receipts,
    signatures: counter.signatures,
    distinctKeys: counter.distinctKeys,
    edgePointSignatures: counter.edgePointSignatures,
    edgePointKeys: counter.edgePointKeys.size,
  };
}

/** The counts of one bundle (MCP's `verify_bundle`, ERC-8004's evaluation). */
export function countBundleCost(bundle: JsonObject, bytes: number): CostCounts {
  return countVerificationCost([bundle], bytes);
}

/** What `GET /info` states of cap units (`limits.cost_units`). */
export function costUnitsInfo() {
  return {
    unit: "one cap unit buys what the heaviest legitimate request the bench knows needs: a 1 MiB batch of 50 real bundles",
    unit_weight: UNIT_WEIGHT,
    // Both edge-point columns, whichever applies here: the answer is the same on every Node
    // line (crypto.ed25519 says which implementation verifies).
    weights: {
      signature: COST_WEIGHTS.signature,
      distinct_key: COST_WEIGHTS.distinctKey,
      kibibyte: COST_WEIGHTS.kibibyte,
      edge_point: {
        libsodium_or_openssl_3_0: { ...EDGE_POINT_WEIGHTS.libsodium_or_openssl_3_0 },
        noble_fallback: { ...EDGE_POINT_WEIGHTS.noble_fallback },
      },
    },
    charged:
      "POST /verify, POST /mcp (verify_bundle), POST /erc8004/validate: ceil(weight / unit_weight) units, at least 1, counted before any signature is checked",
    unit_cpu_ms: UNIT_CPU_MS,
    deadline_charge:
      "a task cut by cpu_task_deadline_ms: ceil(milliseconds it ran / unit_cpu_ms) units",
    max_units_per_request: MAX_UNITS_PER_REQUEST,
    refusals:
      "429 cost_exceeds_cap when the daily cap has fewer units left than the estimate; 413 cost_exceeds_limit past max_units_per_request; neither is charged",
  };
}
