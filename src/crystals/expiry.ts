/**
 * Crystal expiry (`CRYSTAL_TTL_DAYS`, `receiptd crystals expire`): crystals first stored more
 * than the TTL's whole days ago are removed, with their lineage summaries, their expiry index
 * entries and their bytes in the quota usage. The same code runs in both modes, over the
 * `DocumentStore`.
 *
 * A lineage stays closed: a crystal is removed only once every crystal descending from it is
 * expired too, so every `parent_crystal_id` a lineage lists names a crystal it also lists, and
 * a chain that is still written to keeps its history. Per crystal the summary goes first (a
 * lineage never lists a crystal that is gone), then the envelope, then the index entry, so a
 * crash leaves work the next sweep finishes. A child posted while the sweep runs is seen:
 * once a crystal's summary is deleted, the sweep looks for summaries it did not list at the
 * start, and a crystal one of them names as parent is kept, its summary put back (the other
 * half of the protocol is in `storeCrystal`). Usage is lowered before the removal, like the
 * create raises it after: a crash errs by one crystal in the writer's favour.
 */
import type { DocumentStore } from "../storage/document-store.js";
import { addUsage } from "../storage/usage.js";
import { readSummary } from "./lineage.js";
import {
  crystalDocumentId,
  LINEAGE_PREFIX,
  lineageDocumentId,
  STORED_PREFIX,
  storedIndexId,
  USAGE_COLLECTION,
  utcDay,
} from "./store.js";

const DAY_MS = 86_400_000;
const EMPTY_OBJECT = Buffer.from("{}", "utf8");

export interface ExpiryReport {
  /** Crystals past the TTL that were removed (or, in a dry run, would be). */
  expired: number;
  /** Their stored bytes (envelopes and summaries). */
  freedBytes: number;
  /** Crystals past the TTL kept because a crystal descending from them is not. */
  keptForDescendants: number;
  /** Crystals stored without an index entry (before expiry existed), now dated today. */
  adopted: number;
}

interface Indexed {
  indexId: string;
  day: string;
  tenantHash: string;
  crystalId: string;
}

function parseIndexId(indexId: string): Indexed | null {
  const [day, tenantHash, crystalId, ...rest] = indexId.slice(STORED_PREFIX.length).split("/");
  if (day === undefined || tenantHash === undefined || crystalId === undefined) return null;
  if (rest.length > 0) return null;
  return { indexId, day, tenantHash, crystalId };
}

/**
 * Expires the crystals of `store` first stored before `now` minus `ttlDays` whole days
 * (`ttlDays` 0: nothing expires; unindexed crystals are still adopted). `dryRun` writes
 * nothing and reports what a real run would do.
 */
export async function expireCrystals(
  store: DocumentStore,
  options: { ttlDays: number; now?: Date; dryRun?: boolean },
): Promise<ExpiryReport> {
  const now = options.now ?? new Date();
  const dryRun = options.dryRun ?? false;
  const report: ExpiryReport = { expired: 0, freedBytes: 0, keptForDescendants: 0, adopted: 0 };

  const indexed = (await store.list("tenants", STORED_PREFIX))
    .map(parseIndexId)
    .filter((entry): entry is Indexed => entry !== null);
  const known = new Set(indexed.map((entry) => `${entry.tenantHash}/${entry.crystalId}`));
  for (const id of await store.list("crystals", LINEAGE_PREFIX)) {
    const key = id.slice(LINEAGE_PREFIX.length);
    if (known.has(key)) continue;
    const [tenantHash, crystalId] = key.split("/");
    if (tenantHash === undefined || crystalId === undefined) continue;
    report.adopted += 1;
    if (!dryRun) {
      await store.create(
        "tenants",
        storedIndexId(utcDay(now), tenantHash, crystalId),
        EMPTY_OBJECT,
      );
    }
  }
  if (options.ttlDays === 0) return report;

  // Days compare as strings: `YYYY-MM-DD` sorts as it counts.
  const lastExpiredDay = utcDay(new Date(now.getTime() - (options.ttlDays + 1) * DAY_MS));
  const byTenant = new Map<string, Indexed[]>();
  for (const entry of indexed) {
    if (entry.day > lastExpiredDay) continue;
    const candidates = byTenant.get(entry.tenantHash) ?? [];
    candidates.push(entry);
    byTenant.set(entry.tenantHash, candidates);
  }
  for (const [tenantHash, candidates] of byTenant) {
    await expireTenant(store, tenantHash, candidates, dryRun, report);
  }
  return report;
}

async function expireTenant(
  store: DocumentStore,
  tenantHash: string,
  candidates: readonly Indexed[],
  dryRun: boolean,
  report: ExpiryReport,
): Promise<void> {
  const expiring = new Set(candidates.map((entry) => entry.crystalId));
  const parents = new Map<string, string | null>();
  const lineagePrefix = `${LINEAGE_PREFIX}${tenantHash}/`;
  const listed = new Set(await store.list("crystals", lineagePrefix));
  for (const id of listed) {
    const bytes = await store.get("crystals", id);
    if (bytes === null) continue;
    const summary = readSummary(bytes);
    parents.set(summary.crystalId, summary.parentCrystalId);
  }
  // Every ancestor of a crystal that stays, stays.
  const protectedIds = new Set<string>();
  for (const crystalId of parents.keys()) {
    if (expiring.has(crystalId)) continue;
    let parent = parents.get(crystalId) ?? null;
    while (parent !== null && !protectedIds.has(parent)) {
      protectedIds.add(parent);
      parent = parents.get(parent) ?? null;
    }
  }
  const record = await store.get("tenants", tenantHash);
  const owner =
    record === null
      ? null
      : (JSON.parse(Buffer.from(record).toString("utf8")) as { owner?: string }).owner;
  for (const entry of candidates) {
    if (protectedIds.has(entry.crystalId)) {
      report.keptForDescendants += 1;
      continue;
    }
    const summaryId = lineageDocumentId(tenantHash, entry.crystalId);
    const envelopeId = crystalDocumentId(tenantHash, entry.crystalId);
    const [summary, envelope] = await Promise.all([
      store.get("crystals", summaryId),
      store.get("crystals", envelopeId),
    ]);
    const bytes = (summary?.byteLength ?? 0) + (envelope?.byteLength ?? 0);
    if (!dryRun) {
      await store.delete("crystals", summaryId);
      if (await hasNewChild(store, lineagePrefix, listed, entry.crystalId)) {
        if (summary !== null) await store.create("crystals", summaryId, summary);
        report.keptForDescendants += 1;
        continue;
      }
    }
    report.expired += 1;
    report.freedBytes += bytes;
    if (dryRun) continue;
    if (bytes > 0) {
      await addUsage(store, USAGE_COLLECTION, "tenant", tenantHash, -bytes);
      if (typeof owner === "string")
        await addUsage(store, USAGE_COLLECTION, "principal", owner, -bytes);
    }
    await store.delete("crystals", envelopeId);
    await store.delete("tenants", entry.indexId);
  }
}

/**
 * Whether a summary written since the sweep listed `listed` names `crystalId` as its parent:
 * a child posted while the sweep ran. Asked after `crystalId`'s summary is deleted, so a
 * child written later sees its parent gone and withdraws itself (`storeCrystal`).
 */
async function hasNewChild(
  store: DocumentStore,
  lineagePrefix: string,
  listed: ReadonlySet<string>,
  crystalId: string,
): Promise<boolean> {
  for (const id of await store.list("crystals", lineagePrefix)) {
    if (listed.has(id)) continue;
    const bytes = await store.get("crystals", id);
    if (bytes !== null && readSummary(bytes).parentCrystalId === crystalId) return true;
  }
  return false;
}
