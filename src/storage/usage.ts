/**
 * Byte-quota usage (issue 24): `{"bytes": n}` documents under `usage/<kind>/<name>`, kept in
 * the collection beside what they count (crystals: `tenants`; anchors: `anchors`), so both
 * modes share them with no store of their own. `usage/…` ids cannot collide with the
 * `sha256:` ids those collections otherwise hold.
 *
 * Every change is a compare-and-set, so concurrent writers add up. `chargeUsage` checks the
 * quota in the same compare-and-set that raises the usage, so charges never pass it;
 * `addUsage` raises or lowers without a check (crystals check first and raise after the write).
 *
 * One key posting 16 anchors at once made 16 compare-and-sets race on one document: most
 * lost, again and again, and after 20 tries the charge failed as a 500 (the fleet bench saw
 * 27 of 289). So the writers of one process take turns per document (only other processes
 * race now), a lost race waits a random, growing moment before it reads again, and running
 * out of tries is the store being unavailable (503 with Retry-After, nothing charged), not a
 * fault.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { dumpCompact } from "../verifier/json/dump.js";
import {
  type CollectionName,
  type DocumentStore,
  DocumentStoreUnavailableError,
} from "./document-store.js";

export type UsageKind = "tenant" | "principal";

const ATTEMPTS = 20;

export function usageId(kind: UsageKind, name: string): string {
  return `usage/${kind}/${name}`;
}

function bytesOf(document: Uint8Array | null): number {
  if (document === null) return 0;
  const parsed = JSON.parse(Buffer.from(document).toString("utf8")) as { bytes?: unknown };
  return typeof parsed.bytes === "number" ? parsed.bytes : 0;
}

/** The bytes a usage document holds (0 when there is none). */
export async function readUsage(
  store: DocumentStore,
  collection: CollectionName,
  kind: UsageKind,
  name: string,
): Promise<number> {
  return bytesOf(await store.get(collection, usageId(kind, name)));
}

/**
 * Sets the usage to `next(current)` by compare-and-set; `next` returning null leaves it
 * unchanged. Resolves with the usage it read last and whether it was changed.
 */
async function updateUsage(
  store: DocumentStore,
  collection: CollectionName,
  id: string,
  next: (current: number) => number | null,
): Promise<{ current: number; changed: boolean }> {
  return inTurn(store, `${collection}/${id}`, async () => {
    for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
      if (attempt > 0) await sleep(Math.random() * Math.min(50, 2 ** attempt));
      const document = await store.get(collection, id);
      const current = bytesOf(document);
      const total = next(current);
      if (total === null) return { current, changed: false };
      const bytes = Buffer.from(dumpCompact({ bytes: total }), "utf8");
      if (await store.replace(collection, id, document, bytes)) return { current, changed: true };
    }
    throw new DocumentStoreUnavailableError(
      "quota usage could not be updated: too many concurrent writers",
    );
  });
}

/** Per store, the last update queued on each usage document of this process. */
const turns = new WeakMap<DocumentStore, Map<string, Promise<unknown>>>();

/** Runs `update` after this process's earlier updates of `document` have settled. */
async function inTurn<T>(
  store: DocumentStore,
  document: string,
  update: () => Promise<T>,
): Promise<T> {
  let queue = turns.get(store);
  if (queue === undefined) {
    queue = new Map();
    turns.set(store, queue);
  }
  const before = queue.get(document) ?? Promise.resolve();
  const mine = before.then(update, update);
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  queue.set(document, settled);
  try {
    return await mine;
  } finally {
    if (queue.get(document) === settled) queue.delete(document);
  }
}

/** Adds `bytes` (negative: frees them, never below zero) to a usage document. */
export async function addUsage(
  store: DocumentStore,
  collection: CollectionName,
  kind: UsageKind,
  name: string,
  bytes: number,
): Promise<void> {
  await updateUsage(store, collection, usageId(kind, name), (current) =>
    Math.max(0, current + bytes),
  );
}

/**
 * Adds `bytes` unless that would pass `quotaBytes`. Resolves null once charged, or with the
 * bytes already held when the charge was refused.
 */
export async function chargeUsage(
  store: DocumentStore,
  collection: CollectionName,
  kind: UsageKind,
  name: string,
  bytes: number,
  quotaBytes: number,
): Promise<number | null> {
  const { current, changed } = await updateUsage(store, collection, usageId(kind, name), (held) =>
    held + bytes > quotaBytes ? null : held + bytes,
  );
  return changed ? null : current;
}
