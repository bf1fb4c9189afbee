/**
 * Notarization quotas and expiry (issue 32; docs/notarization.md, "Quotas and expiry").
 *
 * Notarizations have no tenant in the contract (like anchors): the principal that asked for
 * a statement owns it, and its stored bytes count against that principal's quota, held in the
 * `notarizations` collection beside the statements (src/storage/usage.ts), so both modes share
 * it. Evaluation keys get a smaller quota each, and all of them together count as one tenant,
 * the free tier, with a quota of its own: many keys buy no more disk than one tier.
 *
 * Each statement stored gets an index entry `stored/<UTC day>/<owner>/<id>`, so expiry finds
 * what is due without reading every statement, and knows whose quota to give the bytes back
 * to. The entry is written before the statement (a crash leaves an entry without a statement,
 * which expiry drops) and the usage is charged before both (a crash errs in the service's
 * favour by one statement).
 */
import type { CreateResult, DocumentStore } from "../storage/document-store.js";
import { addUsage, chargeUsage, readUsage, type UsageKind } from "../storage/usage.js";
import { NOTARIZATIONS } from "./store.js";

const DAY_MS = 86_400_000;
const EMPTY_OBJECT = Buffer.from("{}", "utf8");

export const STORED_PREFIX = "stored/";
/** The owner of statements stored before quotas existed: nobody's quota gets them back. */
const UNKNOWN_OWNER = "-";
/** The tenant every evaluation key's statements count against together. */
export const EVALUATION_TENANT = "evaluation-keys";

export interface NotarizationQuotas {
  /** `NOTARIZATION_KEY_QUOTA_BYTES`: one API key or x402 payer. */
  principalBytes: number;
  /** `NOTARIZATION_EVALUATION_KEY_QUOTA_BYTES`: one evaluation key. */
  evaluationKeyBytes: number;
  /** `NOTARIZATION_EVALUATION_QUOTA_BYTES`: all evaluation keys together. */
  evaluationBytes: number;
}

/** The quota a store was refused by: which owner, its quota, and the bytes it already holds. */
export interface NotarizationQuotaRefusal {
  quotaExceeded: "principal" | "tenant";
  quotaBytes: number;
  heldBytes: number;
}

export type OwnedStoreResult = CreateResult | NotarizationQuotaRefusal;

function isEvaluationKey(owner: string): boolean {
  return owner.startsWith("eval:");
}

type UsageOwner = [kind: UsageKind, name: string];

/** The usage documents `owner`'s statements count against. */
function usageOwnersOf(owner: string): UsageOwner[] {
  if (!isEvaluationKey(owner)) return [["principal", owner]];
  return [
    ["principal", owner],
    ["tenant", EVALUATION_TENANT],
  ];
}

function quotaOf([kind, name]: UsageOwner, quotas: NotarizationQuotas): number {
  if (kind === "tenant") return quotas.evaluationBytes;
  return isEvaluationKey(name) ? quotas.evaluationKeyBytes : quotas.principalBytes;
}

function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function storedIndexId(day: string, owner: string, id: string): string {
  return `${STORED_PREFIX}${day}/${owner}/${id}`;
}

async function giveBack(
  store: DocumentStore,
  charged: readonly UsageOwner[],
  bytes: number,
): Promise<void> {
  for (const [kind, name] of charged) await addUsage(store, NOTARIZATIONS, kind, name, -bytes);
}

/**
 * Stores the statement document `bytes` under `id` for `owner` (a principal), charged to its
 * quotas; a statement already stored costs nothing. Resolves with the store's answer, or with
 * the quota that refused it (nothing stored, nothing charged).
 */
export async function storeOwnedNotarization(
  store: DocumentStore,
  id: string,
  bytes: Uint8Array,
  owner: string,
  quotas: NotarizationQuotas,
  now: Date,
): Promise<OwnedStoreResult> {
  const existing = await store.get(NOTARIZATIONS, id);
  if (existing !== null) return { created: false, stored: existing };
  const size = bytes.byteLength;
  const charged: UsageOwner[] = [];
  for (const usageOwner of usageOwnersOf(owner)) {
    const [kind, name] = usageOwner;
    const quotaBytes = quotaOf(usageOwner, quotas);
    const held = await chargeUsage(store, NOTARIZATIONS, kind, name, size, quotaBytes);
    if (held !== null) {
      await giveBack(store, charged, size);
      return { quotaExceeded: kind, quotaBytes, heldBytes: held };
    }
    charged.push(usageOwner);
  }
  const indexId = storedIndexId(utcDay(now), owner, id);
  try {
    await store.create(NOTARIZATIONS, indexId, EMPTY_OBJECT);
    const result = await store.create(NOTARIZATIONS, id, bytes);
    if (!result.created) {
      // Stored meanwhile by another request: that one paid for it.
      await giveBack(store, charged, size);
      await store.delete(NOTARIZATIONS, indexId);
    }
    return result;
  } catch (error) {
    // The store failed: what cannot be undone stays, in the service's favour.
    await giveBack(store, charged, size).catch(() => {});
    await store.delete(NOTARIZATIONS, indexId).catch(() => false);
    throw error;
  }
}

/** What `/info` shows of the quotas: the figures, not anyone's usage. */
export function notarizationQuotaTerms(quotas: NotarizationQuotas, ttlDays: number) {
  return {
    quota_bytes_per_key: quotas.principalBytes,
    quota_bytes_per_evaluation_key: quotas.evaluationKeyBytes,
    quota_bytes_all_evaluation_keys: quotas.evaluationBytes,
    ttl_days: ttlDays,
    over_quota: "403 notarization_quota_exceeded with limit and held",
  };
}

/** Bytes the statements of `owner` (a principal) hold (0 when none). */
export function notarizationUsage(store: DocumentStore, owner: string): Promise<number> {
  return readUsage(store, NOTARIZATIONS, "principal", owner);
}

/** Bytes the statements of every evaluation key hold together. */
export function evaluationNotarizationUsage(store: DocumentStore): Promise<number> {
  return readUsage(store, NOTARIZATIONS, "tenant", EVALUATION_TENANT);
}

export interface NotarizationExpiryReport {
  /** Statements past the TTL that were removed (or, in a dry run, would be). */
  expired: number;
  /** Their stored bytes. */
  freedBytes: number;
  /** Statements stored without an index entry (before expiry existed), now dated today. */
  adopted: number;
}

interface Indexed {
  indexId: string;
  day: string;
  owner: string;
  id: string;
}

function parseIndexId(indexId: string): Indexed | null {
  const [day, owner, id, ...rest] = indexId.slice(STORED_PREFIX.length).split("/");
  if (day === undefined || owner === undefined || id === undefined || rest.length > 0) return null;
  return { indexId, day, owner, id };
}

/**
 * Removes the statements of `store` stored before `now` minus `ttlDays` whole days
 * (`ttlDays` 0: nothing expires; unindexed statements are still adopted), giving their bytes
 * back to their owners' quotas. `dryRun` writes nothing and reports what a run would do.
 */
export async function expireNotarizations(
  store: DocumentStore,
  options: { ttlDays: number; now?: Date; dryRun?: boolean },
): Promise<NotarizationExpiryReport> {
  const now = options.now ?? new Date();
  const dryRun = options.dryRun ?? false;
  const report: NotarizationExpiryReport = { expired: 0, freedBytes: 0, adopted: 0 };
  const indexed = (await store.list(NOTARIZATIONS, STORED_PREFIX))
    .map(parseIndexId)
    .filter((entry): entry is Indexed => entry !== null);
  const known = new Set(indexed.map((entry) => entry.id));
  for (const id of await store.list(NOTARIZATIONS, "sha256:")) {
    if (known.has(id)) continue;
    report.adopted += 1;
    if (!dryRun) {
      await store.create(
        NOTARIZATIONS,
        storedIndexId(utcDay(now), UNKNOWN_OWNER, id),
        EMPTY_OBJECT,
      );
    }
  }
  if (options.ttlDays === 0) return report;

  // Days compare as strings: `YYYY-MM-DD` sorts as it counts.
  const lastExpiredDay = utcDay(new Date(now.getTime() - (options.ttlDays + 1) * DAY_MS));
  for (const entry of indexed) {
    if (entry.day > lastExpiredDay) continue;
    const bytes = (await store.get(NOTARIZATIONS, entry.id))?.byteLength ?? 0;
    if (bytes > 0) {
      report.expired += 1;
      report.freedBytes += bytes;
    }
    if (dryRun) continue;
    if (bytes > 0 && entry.owner !== UNKNOWN_OWNER) {
      await giveBack(store, usageOwnersOf(entry.owner), bytes);
    }
    await store.delete(NOTARIZATIONS, entry.id);
    await store.delete(NOTARIZATIONS, entry.indexId);
  }
  return report;
}
