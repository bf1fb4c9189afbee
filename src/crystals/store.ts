/**
 * Where crystals live (service.md §6), over the shared `DocumentStore`:
 *
 * - `tenants/<tenant_hash>`: `{"tenant_hash","owner"}`, created once, atomically, by the first
 *   principal that writes to the tenant. It is never replaced, so ownership cannot move.
 * - `crystals/<tenant_hash>/<crystal_id>`: the canonical envelope, byte for byte as served:
 *   the first accepted write's, in its writer's base64url spelling (padded or not). A later
 *   write of the same crystal in the other spelling changes nothing, so every client reads
 *   back what the first writer sent.
 * - `crystals/lineage/<tenant_hash>/<crystal_id>`: the crystal's public summary (lineage.ts),
 *   so a lineage is listed by prefix and built without reading a ciphertext.
 *
 * - `tenants/stored/<YYYY-MM-DD>/<tenant_hash>/<crystal_id>`: the UTC day the crystal was
 *   first stored, the expiry index (expiry.ts). The day is in the id, so a sweep lists it by
 *   prefix without reading any document; the service's clock, not the client's `created_at`,
 *   decides the age.
 *
 * Crystal ids are scoped by tenant: two tenants may hold the same ciphertext, and one tenant's
 * writes can never learn anything about another's crystals. Ids are at most 159 bytes once
 * percent-encoded, well under the store's 250.
 */
import type { Principal } from "../access/principal.js";
import type { DocumentStore } from "../storage/document-store.js";
import { addUsage, readUsage } from "../storage/usage.js";
import { dumpCompact } from "../verifier/json/dump.js";
import { sameCrystal } from "./envelope.js";

/** What a worker hands back for a valid `POST /crystals` body. */
export interface PreparedCrystal {
  crystalId: string;
  parentCrystalId: string | null;
  tenantHash: string;
  sizeBytes: number;
  /** The canonical envelope to store. */
  envelope: Uint8Array;
  /** Its lineage summary. */
  summary: Uint8Array;
}

export type StoreOutcome =
  /** A new crystal: 201. */
  | "created"
  /** The same envelope was already stored (in either base64url spelling): 200. */
  | "unchanged"
  /** Another principal owns the tenant: 403. */
  | "tenant_forbidden"
  /** `parent_crystal_id` names no crystal of this tenant: 422. */
  | "parent_not_found"
  /** The id is stored with a different envelope (not just another spelling): 409. */
  | "crystal_conflict"
  /** The tenant's or the principal's byte quota would be exceeded: 403. */
  | { quotaExceeded: "tenant" | "principal"; quotaBytes: number; usedBytes: number };

/** Stored bytes a tenant, and a principal across its tenants, may hold (`ServiceLimits`). */
export interface CrystalQuotas {
  tenantBytes: number;
  principalBytes: number;
}

/**
 * Crystal usage lives in `tenants` beside the tenant records (src/storage/usage.ts): the
 * envelope and summary bytes stored. It is raised after a crystal is created, so a crash
 * between the create and the raise leaves the usage short by one crystal, in the writer's
 * favour. Concurrent writes near the limit can overshoot it by what is in flight at once.
 */
export const USAGE_COLLECTION = "tenants";
const EMPTY_OBJECT = Buffer.from("{}", "utf8");

export const LINEAGE_PREFIX = "lineage/";
/** Prefix of the expiry index in `tenants`: `stored/<day>/<tenant_hash>/<crystal_id>`. */
export const STORED_PREFIX = "stored/";

/** The expiry index id of a crystal first stored on `day` (`YYYY-MM-DD`, UTC). */
export function storedIndexId(day: string, tenantHash: string, crystalId: string): string {
  return `${STORED_PREFIX}${day}/${tenantHash}/${crystalId}`;
}

/** The UTC day of `now`, as the expiry index spells it. */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}
/** Summaries read at once while building a lineage, so a large tenant cannot exhaust file handles. */
const READ_BATCH = 64;

export function crystalDocumentId(tenantHash: string, crystalId: string): string {
  return `${tenantHash}/${crystalId}`;
}

function lineagePrefix(tenantHash: string): string {
  return `${LINEAGE_PREFIX}${tenantHash}/`;
}

export function lineageDocumentId(tenantHash: string, crystalId: string): string {
  return `${lineagePrefix(tenantHash)}${crystalId}`;
}

/** The tenant record `principal` would write: equal bytes mean the same owner. */
function tenantRecord(tenantHash: string, principal: Principal): Buffer {
  return Buffer.from(dumpCompact({ tenant_hash: tenantHash, owner: principal }), "utf8");
}

function sameBytes(left: Uint8Array, right: Uint8Array): boolean {
  return Buffer.from(left.buffer, left.byteOffset, left.byteLength).equals(right);
}

/**
 * Stores a validated crystal for `principal`. The order is what keeps tenants opaque to
 * outsiders: ownership is decided before anything about the tenant's crystals is looked at,
 * so a principal that does not own a tenant learns only `tenant_forbidden`. A tenant is
 * claimed only by a write that is otherwise acceptable (a first write naming a parent claims
 * nothing, since a new tenant has no parent to name).
 *
 * The envelope is written first and is the commit point; the summary follows. A crash in
 * between leaves a crystal that lineage does not list yet, and re-posting it (200) writes the
 * missing summary.
 *
 * Lineage and expiry agree without a lock or a transaction, in both stores, by each side
 * announcing before it checks (issue 37): a new child writes its summary and then checks
 * that its parent's summary is still there, and expiry deletes a parent's summary and then
 * checks for children it did not know of (expiry.ts). Each store orders single-document
 * operations, so at least one side sees the other: the child is withdrawn (`parent_not_found`)
 * or the parent kept, never a child whose parent is gone. (Both may back off; a retry of the
 * child then succeeds.)
 */
export async function storeCrystal(
  store: DocumentStore,
  principal: Principal,
  crystal: PreparedCrystal,
  quotas: CrystalQuotas | null = null,
  now: Date = new Date(),
): Promise<StoreOutcome> {
  const { tenantHash, crystalId, parentCrystalId } = crystal;
  const record = tenantRecord(tenantHash, principal);
  const owner = await store.get("tenants", tenantHash);
  if (owner !== null && !sameBytes(owner, record)) return "tenant_forbidden";
  if (
    parentCrystalId !== null &&
    (await store.get("crystals", crystalDocumentId(tenantHash, parentCrystalId))) === null
  ) {
    return "parent_not_found";
  }
  const bytes = crystal.envelope.byteLength + crystal.summary.byteLength;
  if (quotas !== null) {
    // A crystal already stored costs nothing more: only a new id is held to the quota.
    const existing = await store.get("crystals", crystalDocumentId(tenantHash, crystalId));
    if (existing === null) {
      for (const [kind, id, quotaBytes] of [
        ["tenant", tenantHash, quotas.tenantBytes],
        ["principal", principal, quotas.principalBytes],
      ] as const) {
        const usedBytes = await readUsage(store, USAGE_COLLECTION, kind, id);
        if (usedBytes + bytes > quotaBytes) return { quotaExceeded: kind, quotaBytes, usedBytes };
      }
    }
  }
  if (owner === null) {
    // Two principals may race for a new tenant: the atomic create picks one.
    const claim = await store.create("tenants", tenantHash, record);
    if (!claim.created && !sameBytes(claim.stored, record)) return "tenant_forbidden";
  }
  const written = await store.create(
    "crystals",
    crystalDocumentId(tenantHash, crystalId),
    crystal.envelope,
  );
  if (!written.created && !sameCrystal(written.stored, crystal.envelope)) return "crystal_conflict";
  const summaryId = lineageDocumentId(tenantHash, crystalId);
  await store.create("crystals", summaryId, crystal.summary);
  if (!written.created) return "unchanged";
  if (
    parentCrystalId !== null &&
    (await store.get("crystals", lineageDocumentId(tenantHash, parentCrystalId))) === null
  ) {
    // Expiry took the parent while this child was written: withdraw the child, summary first
    // (a lineage never lists a crystal that is gone). Nothing was indexed or counted yet.
    await store.delete("crystals", summaryId);
    await store.delete("crystals", crystalDocumentId(tenantHash, crystalId));
    return "parent_not_found";
  }
  // A crash before this leaves the crystal unindexed; the expiry sweep adopts it.
  await store.create("tenants", storedIndexId(utcDay(now), tenantHash, crystalId), EMPTY_OBJECT);
  await addUsage(store, USAGE_COLLECTION, "tenant", tenantHash, bytes);
  await addUsage(store, USAGE_COLLECTION, "principal", principal, bytes);
  return "created";
}

/** The canonical envelope of `crystalId` in `tenantHash`, or null when the tenant has none. */
export function readCrystal(
  store: DocumentStore,
  tenantHash: string,
  crystalId: string,
): Promise<Uint8Array | null> {
  return store.get("crystals", crystalDocumentId(tenantHash, crystalId));
}

/** The summary documents of every crystal of `tenantHash` (none for an unknown tenant). */
export async function readLineageSummaries(
  store: DocumentStore,
  tenantHash: string,
): Promise<Uint8Array[]> {
  const ids = await store.list("crystals", lineagePrefix(tenantHash));
  const summaries: Uint8Array[] = [];
  for (let start = 0; start < ids.length; start += READ_BATCH) {
    const batch = ids.slice(start, start + READ_BATCH);
    const read = await Promise.all(batch.map((id) => store.get("crystals", id)));
    for (const bytes of read) if (bytes !== null) summaries.push(bytes);
  }
  return summaries;
}
