/**
 * A tenant's crystal lineage (service.md §6, `GET /crystals/lineage`). Each stored crystal has a
 * small summary document beside its envelope — the public facts only — so a lineage is built
 * from summaries and never reads a ciphertext (an envelope can hold 2 MiB of it).
 *
 * Pure and synchronous; the service runs it on a CPU-pool thread.
 */

import { codedErrorClass } from "../verifier/coded-error.js";
import { canonicalBytes } from "../verifier/json/canonical.js";
import { dumpCompact } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import { isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";
import { type Instant, isSha256Id, rfc3339Instant, type ValidCrystal } from "./envelope.js";

/** One crystal as a lineage lists it. */
export interface LineageEntry {
  crystalId: string;
  parentCrystalId: string | null;
  sizeBytes: number;
  createdAt: string;
  metadataPublic: JsonObject;
}

function entryObject(entry: LineageEntry): JsonObject {
  return new Map<string, JsonValue>([
    ["crystal_id", entry.crystalId],
    ["parent_crystal_id", entry.parentCrystalId],
    ["size_bytes", entry.sizeBytes],
    ["created_at", entry.createdAt],
    ["metadata_public", entry.metadataPublic],
  ]);
}

/** The summary document stored for a crystal: JCS of its lineage entry. */
export function lineageSummary(crystal: ValidCrystal): Buffer {
  return canonicalBytes(entryObject(crystal));
}

export type LineageSummaryErrorCode = "bad_lineage_summary";
/** A summary the service wrote and now cannot read: a fault, never a client's error. */
export class LineageSummaryError extends codedErrorClass<LineageSummaryErrorCode>(
  "bad_lineage_summary",
) {
  override readonly name = "LineageSummaryError";
}

/** A stored summary read back (expiry reads the parent links from it). */
export function readSummary(bytes: Uint8Array): LineageEntry & { instant: Instant } {
  const value = parseJson(bytes);
  const broken = () => new LineageSummaryError("a stored crystal summary is malformed");
  if (!isObject(value)) throw broken();
  const crystalId = value.get("crystal_id");
  const parentCrystalId = value.get("parent_crystal_id");
  const sizeBytes = value.get("size_bytes");
  const createdAt = value.get("created_at");
  const metadataPublic = value.get("metadata_public");
  const instant = typeof createdAt === "string" ? rfc3339Instant(createdAt) : null;
  if (
    !isSha256Id(crystalId) ||
    !(parentCrystalId === null || isSha256Id(parentCrystalId)) ||
    typeof sizeBytes !== "number" ||
    instant === null ||
    !isObject(metadataPublic)
  ) {
    throw broken();
  }
  return {
    crystalId,
    parentCrystalId,
    sizeBytes,
    createdAt: createdAt as string,
    metadataPublic,
    instant,
  };
}

function byCreationThenId(
  left: { instant: Instant; crystalId: string },
  right: { instant: Instant; crystalId: string },
): number {
  const bySeconds = left.instant.seconds - right.instant.seconds;
  if (bySeconds !== 0) return bySeconds;
  const byNanos = left.instant.nanos - right.instant.nanos;
  if (byNanos !== 0) return byNanos;
  // Ids are ASCII, so UTF-16 order is code point order.
  return left.crystalId < right.crystalId ? -1 : left.crystalId > right.crystalId ? 1 : 0;
}

/**
 * The lineage response for `tenantHash` from its crystals' summary documents: the crystals
 * ordered by the instant `created_at` names, then by id; `roots` are the crystals without a
 * parent and `heads` the crystals no other crystal names as parent, both in that order.
 */
export function lineageJson(tenantHash: string, summaries: readonly Uint8Array[]): string {
  const entries = summaries.map(readSummary).sort(byCreationThenId);
  const parents = new Set(entries.map((entry) => entry.parentCrystalId));
  return dumpCompact(
    new Map<string, JsonValue>([
      ["tenant_hash", tenantHash],
      ["count", entries.length],
      ["crystals", entries.map(entryObject)],
      ["roots", entries.filter((entry) => entry.parentCrystalId === null).map((e) => e.crystalId)],
      ["heads", entries.filter((entry) => !parents.has(entry.crystalId)).map((e) => e.crystalId)],
    ]),
  );
}
