/**
 * Does the bundle answer the ERC-8004 request? The request's `task_hash` (32 bytes) must equal
 * one of four values the bundle determines (service.md §5), tried in this order:
 * - `task_id_sha256`: SHA-256 of the UTF-8 bytes of the bundle's `task_id`;
 * - `task_id_keccak256`: keccak-256 of the same bytes (what EVM tooling hashes a string with);
 * - `delivery_response_hash`: the `response_hash` of a `delivery.attestation` receipt;
 * - `terminal_receipt_digest`: the receipt digest (verifier.md §2) of the terminal receipt —
 *   the last `task.termination` receipt, or the last receipt when none terminates the task.
 * Every spec version (0.1–0.6) keeps `task_id` on the bundle and `response_hash` in the
 * delivery body, so one rule set serves them all.
 */
import { hash } from "node:crypto";
import { keccak256 } from "../evm/address.js";
import { bodyOf, typeOf } from "../verifier/bundle/context.js";
import { recordDigest } from "../verifier/crypto/digest.js";
import { CanonicalizationError } from "../verifier/json/canonical.js";
import { isArray, isObject, type JsonObject, member } from "../verifier/json/value.js";

export const BINDING_RULES = [
  "task_id_sha256",
  "task_id_keccak256",
  "delivery_response_hash",
  "terminal_receipt_digest",
] as const;
export type BindingRule = (typeof BINDING_RULES)[number];

const HASH_32 = /^(?:0x|sha256:)([0-9a-fA-F]{64})$/;

/**
 * The 32 bytes of a hash written `0x<64 hex>` or `sha256:<64 hex>` (either case), or null.
 * The same reading serves the request's `task_hash` and the bundle's `response_hash` values,
 * so a hash matches whichever of the two spellings each side used.
 */
export function hash32(text: string): Buffer | null {
  const hex = HASH_32.exec(text)?.[1];
  return hex === undefined ? null : Buffer.from(hex, "hex");
}

function objectReceipts(bundle: JsonObject): JsonObject[] {
  const receipts = member(bundle, "receipts");
  return isArray(receipts) ? receipts.filter(isObject) : [];
}

/** The `task.termination` receipt (the last, should there be several), else the last receipt. */
export function terminalReceipt(bundle: JsonObject): JsonObject | null {
  const receipts = objectReceipts(bundle);
  return receipts.findLast((r) => typeOf(r) === "task.termination") ?? receipts.at(-1) ?? null;
}

function taskIdBytes(bundle: JsonObject): Buffer | null {
  const taskId = member(bundle, "task_id");
  return typeof taskId === "string" ? Buffer.from(taskId, "utf8") : null;
}

function responseHashes(bundle: JsonObject): Buffer[] {
  const hashes: Buffer[] = [];
  for (const receipt of objectReceipts(bundle)) {
    if (typeOf(receipt) !== "delivery.attestation") continue;
    const responseHash = bodyOf(receipt)?.get("response_hash");
    const bytes = typeof responseHash === "string" ? hash32(responseHash) : null;
    if (bytes !== null) hashes.push(bytes);
  }
  return hashes;
}

function receiptDigestBytes(receipt: JsonObject | null): Buffer | null {
  if (receipt === null) return null;
  try {
    return hash32(recordDigest(receipt));
  } catch (error) {
    if (error instanceof CanonicalizationError) return null;
    throw error;
  }
}

/** The first rule under which `taskHash` names this bundle's task, or null. */
export function bindTaskHash(bundle: JsonObject, taskHash: Uint8Array): BindingRule | null {
  const same = (candidate: Uint8Array | null) =>
    candidate !== null && Buffer.compare(candidate, taskHash) === 0;
  const taskId = taskIdBytes(bundle);
  if (taskId !== null) {
    if (same(hash("sha256", taskId, "buffer"))) return "task_id_sha256";
    if (same(keccak256(taskId))) return "task_id_keccak256";
  }
  if (responseHashes(bundle).some(same)) return "delivery_response_hash";
  if (same(receiptDigestBytes(terminalReceipt(bundle)))) return "terminal_receipt_digest";
  return null;
}
