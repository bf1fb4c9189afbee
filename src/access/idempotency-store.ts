/**
 * Where `Idempotency-Key` entries live (plugins/idempotency.ts, docs/access-decisions.md
 * "Idempotency-Key"): one entry per principal and key, first a claim while the request runs,
 * then the answer it got, kept `IDEMPOTENCY_TTL_MS`. Embedded mode keeps entries in process
 * memory (`MemoryIdempotencyStore`, bounded, swept); distributed mode in Redis
 * (`redis/redis-idempotency-store.ts`), shared by every instance.
 *
 * An entry holds the request's fingerprint (a SHA-256 of method, URL and body, never the
 * body) and the answer's status, a few headers and body bytes: never request content.
 */
import { createHash, randomBytes } from "node:crypto";

/** How long an answer is kept for retries: draft-07 leaves it to the server; 24 h. */
export const IDEMPOTENCY_TTL_MS = 86_400_000;

/**
 * How long a claim lasts without an answer. A request that outlives it (or an instance that
 * died holding it) no longer blocks its retries: past it a retry runs again. Longer than any
 * request lives: the request timeout (60 s) and a held paid answer's settlement.
 */
export const IDEMPOTENCY_CLAIM_MS = 120_000;

/** Answers with a larger body are not kept (the claim is dropped instead). */
export const MAX_STORED_ANSWER_BYTES = 256 * 1024;

/** The answer a retry gets again. */
export interface StoredAnswer {
  status: number;
  /** Lowercase names; only those the plugin chooses to keep. */
  headers: Record<string, string>;
  body: Buffer;
}

export type IdempotencyBegin =
  /** Nobody held the key: it is now claimed, `claim` being what the store holds meanwhile. */
  | { state: "claimed"; claim: string }
  /** Another request holds it and has not answered yet. */
  | { state: "in_flight"; fingerprint: string }
  | { state: "answered"; fingerprint: string; answer: StoredAnswer };

export interface IdempotencyStore {
  /**
   * Claims `entry` for a request with `fingerprint`, atomically, or says who holds it. `owner`
   * (`idempotencyOwner`) names the principal whose share of a bounded store the entry takes.
   */
  begin(entry: string, fingerprint: string, owner?: string): Promise<IdempotencyBegin>;
  /**
   * Replaces `claim` with the answer, kept `IDEMPOTENCY_TTL_MS` within its owner's share (the
   * owner's oldest answers make room; an answer larger than the share is not kept); nothing if
   * the claim is gone (it expired and another request holds the key now). `owner` is the one
   * `begin` was given.
   */
  complete(
    entry: string,
    claim: string,
    fingerprint: string,
    answer: StoredAnswer,
    owner?: string,
  ): Promise<void>;
  /** Drops `claim` (an answer that is not kept); nothing if it is gone. */
  release(entry: string, claim: string, owner?: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The entry's name: a hash of the principal and the key, so that no store holds a key id, a
 * payer's address or the client's key, and two principals never share an entry.
 */
export function idempotencyEntry(principal: string, key: string): string {
  return createHash("sha256").update(`${principal}\n${key}`).digest("hex");
}

/**
 * Whose share of a bounded store an entry takes: a hash of the principal, for the same reason
 * as `idempotencyEntry`.
 */
export function idempotencyOwner(principal: string): string {
  return createHash("sha256").update(`owner\n${principal}`).digest("hex");
}

/** What a retry must repeat to get the first answer: method, URL (path and query) and body. */
export function requestFingerprint(method: string, url: string, body: Uint8Array): string {
  return createHash("sha256").update(`${method} ${url}\n`).update(body).digest("hex");
}

/** The stored form shared by the stores: JSON with the body in base64. */
interface EntryRecord {
  v: 1;
  f: string;
  /** A claim: its token. */
  t?: string;
  s?: number;
  h?: Record<string, string>;
  b?: string;
}

/** A claim of its own (a random token), so that a request settles only the claim it made. */
export function newClaim(fingerprint: string): string {
  const token = randomBytes(12).toString("hex");
  return JSON.stringify({ v: 1, f: fingerprint, t: token } satisfies EntryRecord);
}

export function encodeAnswer(fingerprint: string, answer: StoredAnswer): string {
  return JSON.stringify({
    v: 1,
    f: fingerprint,
    s: answer.status,
    h: answer.headers,
    b: answer.body.toString("base64"),
  } satisfies EntryRecord);
}

/** The state an existing entry reports; an unreadable one throws (the store is not trusted). */
export function decodeEntry(text: string): Exclude<IdempotencyBegin, { state: "claimed" }> {
  const record = JSON.parse(text) as EntryRecord;
  if (record.v !== 1 || typeof record.f !== "string") throw new Error("bad idempotency entry");
  if (record.t !== undefined) return { state: "in_flight", fingerprint: record.f };
  if (
    !Number.isInteger(record.s) ||
    typeof record.b !== "string" ||
    typeof record.h !== "object" ||
    record.h === null
  ) {
    throw new Error("bad idempotency entry");
  }
  return {
    state: "answered",
    fingerprint: record.f,
    answer: {
      status: record.s as number,
      headers: record.h,
      body: Buffer.from(record.b, "base64"),
    },
  };
}

export interface MemoryIdempotencyLimits {
  /** Entries kept at most (default 10,000); the oldest go first. */
  maxEntries?: number;
  /** Stored answer bytes kept at most (default 64 MiB); the oldest go first. */
  maxBytes?: number;
  /**
   * One principal's share (default a quarter of each bound): past it, that principal's own
   * oldest entries go first, so one principal's flood of keys never evicts another's answers.
   * The global bounds stay, as a backstop for many principals at once.
   */
  maxEntriesPerOwner?: number;
  maxBytesPerOwner?: number;
}

interface MemoryEntry {
  text: string;
  expiresAt: number;
  owner: string;
}

/** An owner's entries, oldest first (a Set keeps insertion order), and their bytes. */
interface OwnerShare {
  entries: Set<string>;
  bytes: number;
}

/** The owner of entries begun without one: only the global bounds apply to them. */
const UNOWNED = "";

/**
 * Embedded mode's store: process memory, bounded by entries and bytes (oldest first, so a
 * flood of keys costs the oldest answers their replay, never memory), first per principal
 * (its share: its own oldest go first) and then in all (the backstop), expired entries swept
 * at most once a second as requests come. Not journaled: a restart forgets every key, as it
 * forgets the embedded nonce ledger (docs/access-decisions.md says why).
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, MemoryEntry>();
  readonly #now: () => number;
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #maxEntriesPerOwner: number;
  readonly #maxBytesPerOwner: number;
  readonly #owners = new Map<string, OwnerShare>();
  #bytes = 0;
  #nextSweep = 0;

  constructor(now: () => number = Date.now, limits: MemoryIdempotencyLimits = {}) {
    this.#now = now;
    this.#maxEntries = limits.maxEntries ?? 10_000;
    this.#maxBytes = limits.maxBytes ?? 64 * 1024 * 1024;
    this.#maxEntriesPerOwner =
      limits.maxEntriesPerOwner ?? Math.max(1, Math.floor(this.#maxEntries / 4));
    this.#maxBytesPerOwner = limits.maxBytesPerOwner ?? Math.floor(this.#maxBytes / 4);
  }

  /** How many entries `owner` holds (tests, and reasoning about shares). */
  entriesOf(owner: string): number {
    return this.#owners.get(owner)?.entries.size ?? 0;
  }

  get size(): number {
    return this.#entries.size;
  }

  async begin(entry: string, fingerprint: string, owner = UNOWNED): Promise<IdempotencyBegin> {
    const now = this.#now();
    this.#sweep(now);
    const held = this.#entries.get(entry);
    if (held !== undefined && held.expiresAt > now) return decodeEntry(held.text);
    const claim = newClaim(fingerprint);
    this.#put(entry, claim, now + IDEMPOTENCY_CLAIM_MS, owner);
    return { state: "claimed", claim };
  }

  async complete(
    entry: string,
    claim: string,
    fingerprint: string,
    answer: StoredAnswer,
  ): Promise<void> {
    const held = this.#entries.get(entry);
    if (held?.text !== claim) return;
    const expiresAt = this.#now() + IDEMPOTENCY_TTL_MS;
    this.#put(entry, encodeAnswer(fingerprint, answer), expiresAt, held.owner);
  }

  async release(entry: string, claim: string): Promise<void> {
    if (this.#entries.get(entry)?.text === claim) this.#delete(entry);
  }

  async close(): Promise<void> {
    this.#entries.clear();
    this.#owners.clear();
    this.#bytes = 0;
  }

  #put(entry: string, text: string, expiresAt: number, owner: string): void {
    this.#delete(entry);
    this.#entries.set(entry, { text, expiresAt, owner });
    this.#bytes += text.length;
    let share = this.#owners.get(owner);
    if (share === undefined) {
      share = { entries: new Set(), bytes: 0 };
      this.#owners.set(owner, share);
    }
    share.entries.add(entry);
    share.bytes += text.length;
    // The owner's share first: its own oldest go, never the entry just put.
    for (const oldest of owner === UNOWNED ? [] : share.entries) {
      if (share.entries.size <= this.#maxEntriesPerOwner && share.bytes <= this.#maxBytesPerOwner) {
        break;
      }
      if (oldest === entry) break;
      this.#delete(oldest);
    }
    // The backstop: every owner's oldest, in the order they were put.
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) break;
      this.#delete(oldest);
    }
  }

  #delete(entry: string): void {
    const held = this.#entries.get(entry);
    if (held === undefined) return;
    this.#entries.delete(entry);
    this.#bytes -= held.text.length;
    const share = this.#owners.get(held.owner);
    if (share === undefined) return;
    share.entries.delete(entry);
    share.bytes -= held.text.length;
    if (share.entries.size === 0) this.#owners.delete(held.owner);
  }

  #sweep(now: number): void {
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + 1000;
    for (const [entry, held] of this.#entries) {
      if (held.expiresAt <= now) this.#delete(entry);
    }
  }
}
