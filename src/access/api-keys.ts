/**
 * API keys (service.md §9). A key is `svc_` + 48 lowercase hex digits (24 random bytes), shown
 * to the operator once and stored only as its SHA-256: the hash hex is the document id in the
 * "keys" collection, and each record holds the name, plan, optional daily cap and dates.
 *
 * Names are unique among keys that are not revoked, so `receiptd keys revoke <name>` always
 * means one key. Uniqueness rests on a claim document per name (`name:<name>` in the same
 * collection, created once and atomically); a claim whose key is revoked may be taken over by a
 * compare-and-set replace.
 *
 * Evaluation keys (docs/evaluation-keys.md) are keys like any other, issued by the service
 * itself (`POST /keys/evaluation`) rather than by an operator: their record says so (`kind`)
 * and carries an expiry, after which they are refused as `key_expired`.
 *
 * Record versions: version 1 (`created_at`, `daily_cap`, `name`, `plan`, `revoked_at`,
 * `sha256`) is every key written before evaluation keys existed, and is still what a standard
 * key is written as, so its bytes (and a server of the previous release reading them) do not
 * change. Version 2 adds `kind` and `expires_at` and is written only for a key that needs
 * them: a server that knows only version 1 refuses such a record rather than accept an
 * evaluation key without its expiry. Both versions are read; nothing needs rewriting.
 *
 * The CLI writes keys while servers run. Servers read a key's record when it is presented and
 * keep a live record for at most `KEY_CACHE_MS`, so a new key works at once (unknown keys are
 * never cached) and a revocation reaches every server within that window; the CLI waits the
 * window out before it reports a revocation as done. Revoked records never become valid again,
 * so they are remembered as long as they fit in the cache.
 */
import { createHash, hash, randomBytes, timingSafeEqual } from "node:crypto";
import type { DocumentStore } from "../storage/document-store.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { canonicalBytes } from "../verifier/json/canonical.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import { isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";
import { formatUtcSeconds } from "../verifier/timestamps.js";

export const KEY_PREFIX = "svc_";
const KEY_RANDOM_BYTES = 24;
const KEY_PATTERN = /^svc_[0-9a-f]{48}$/;
const HASH_ID_PATTERN = /^[0-9a-f]{64}$/;

/** Hex digits of the key's SHA-256 that name it in listings, audit lines and statements. */
export const KEY_ID_LENGTH = 12;

/** How long a server may keep using a live key record it read. */
export const KEY_CACHE_MS = 1000;
const DEFAULT_MAX_CACHED_KEYS = 10_000;

/** A claim whose key record never appeared is abandoned (its creator died) after this long. */
const STALE_CLAIM_MS = 60_000;
const MAX_CAS_ATTEMPTS = 8;

export const DEFAULT_PLAN = "standard";
/** The plan label of evaluation keys; reserved, so an operator's key cannot look like one. */
export const EVALUATION_PLAN = "evaluation";
/** Evaluation keys are named `evaluation-<id>`; operators' names may not start so. */
export const EVALUATION_NAME_PREFIX = "evaluation-";
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const PLAN_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** A standard key without expiry: the original record form, still written as it was. */
const RECORD_VERSION = 1;
/** A record with `kind` and `expires_at`. */
const RECORD_VERSION_KINDS = 2;
const CLAIM_VERSION = 1;
const NAME_CLAIM_PREFIX = "name:";
const WHOLE_SECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

/** An operator's key (`receiptd keys create`), or a self-served evaluation key. */
export type KeyKind = "standard" | "evaluation";

/** One key as stored, without the key itself. */
export interface ApiKey {
  /** The first `KEY_ID_LENGTH` hex digits of `sha256`. */
  id: string;
  /** SHA-256 of the key, lowercase hex (the document id). */
  sha256: string;
  name: string;
  plan: string;
  /** The key's own daily cap; null means the configured default (`KEY_DAILY_CAP`). */
  dailyCap: number | null;
  /** RFC 3339, whole seconds, UTC. */
  createdAt: string;
  revokedAt: string | null;
  kind: KeyKind;
  /** When the key stops working (RFC 3339, whole seconds, UTC); null: never. */
  expiresAt: string | null;
}

export interface NewKeyOptions {
  name: string;
  plan?: string;
  dailyCap?: number | null;
}

export interface CreatedKey {
  /** The key in clear: returned here once and stored nowhere. */
  key: string;
  record: ApiKey;
}

export type InvalidKeyCause = "malformed" | "unknown" | "revoked";

export interface NewEvaluationKeyOptions {
  /** The key's daily cap, fixed at issuance (the terms the client was shown). */
  dailyCap: number;
  /** How long the key works from now, in milliseconds (rounded down to whole seconds). */
  lifetimeMs: number;
}

export type Authentication =
  | { ok: true; key: ApiKey; dailyCap: number }
  /** The client sees only `invalid_key`; `cause` is for logs and tests. */
  | { ok: false; error: "invalid_key"; cause: InvalidKeyCause }
  /** A key that is not revoked but whose `expiresAt` has passed. */
  | { ok: false; error: "key_expired"; key: ApiKey };

export type RevokeResult =
  | { status: "revoked"; key: ApiKey }
  | { status: "already_revoked"; key: ApiKey }
  | { status: "not_found" };

export type KeyOptionErrorCode = "bad_key_option";
/** A name, plan or cap that cannot be stored. */
export class KeyOptionError extends codedErrorClass<KeyOptionErrorCode>("bad_key_option") {
  override readonly name = "KeyOptionError";
}

export type KeyNameTakenErrorCode = "key_name_taken";
export class KeyNameTakenError extends codedErrorClass<KeyNameTakenErrorCode>("key_name_taken") {
  override readonly name = "KeyNameTakenError";
}

export type KeyStoreErrorCode = "key_store_invalid";
/** A stored record that is not one this module wrote, or a write that kept losing races. */
export class KeyStoreError extends codedErrorClass<KeyStoreErrorCode>("key_store_invalid") {
  override readonly name = "KeyStoreError";
}

export function isWellFormedKey(text: string): boolean {
  return KEY_PATTERN.test(text);
}

/** SHA-256 of a key as lowercase hex: its document id. */
export function hashKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

export function generateKey(): string {
  return `${KEY_PREFIX}${randomBytes(KEY_RANDOM_BYTES).toString("hex")}`;
}

export function keyIdOf(sha256: string): string {
  return sha256.slice(0, KEY_ID_LENGTH);
}

/** Whether `key` has an expiry and `nowMs` is at or past it. */
export function isExpired(key: ApiKey, nowMs: number): boolean {
  return key.expiresAt !== null && nowMs >= Date.parse(key.expiresAt);
}

/** The effective cap of a key: its own, or the configured default. */
export function dailyCapOf(key: ApiKey, defaultDailyCap: number): number {
  return key.dailyCap ?? defaultDailyCap;
}

/**
 * The key a request presents: `Authorization: Bearer <key>` or `X-SVC-Key: <key>`, or null
 * when it presents none. An `Authorization` header of another scheme is not ours and is
 * ignored. Two different keys come back joined by ", ", which no key matches, so the request
 * is refused as `invalid_key` rather than served under either one.
 */
export function presentedKey(headers: {
  authorization?: string | string[] | undefined;
  "x-svc-key"?: string | string[] | undefined;
}): string | null {
  const found = new Set<string>();
  const authorization = joined(headers.authorization);
  if (authorization !== undefined) {
    const bearer = /^bearer(?:[ \t]+(.*))?$/i.exec(authorization.trim());
    if (bearer) found.add((bearer[1] ?? "").trim());
  }
  const header = joined(headers["x-svc-key"]);
  if (header !== undefined) found.add(header.trim());
  return found.size === 0 ? null : [...found].join(", ");
}

/** Query parameters a client may have put its key in (none is read: URLs end up in logs). */
const KEY_QUERY_PARAMETERS = new Set([
  "key",
  "api_key",
  "apikey",
  "api-key",
  "svc_key",
  "x-svc-key",
  "x_svc_key",
  "access_token",
  "token",
]);
/** A query parameter's name that may be said back: short, and nothing that needs escaping. */
const PLAIN_NAME = /^[A-Za-z0-9_.-]{1,32}$/;
/** An HTTP auth-scheme token (RFC 9110 §11.1), short enough to say back. */
const AUTH_SCHEME = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,31})(?:[ \t]|$)/;
const HOW_TO_SEND = "send it as 'Authorization: Bearer svc_…' or 'X-SVC-Key: svc_…'";

/**
 * For a request that presents no key (`presentedKey` is null): what it brought in a key's
 * place, said back in `missing_key`'s detail with how to send it instead, or null when it
 * brought nothing that looks like one. Never says back a key or a header's value: only the
 * scheme of an `Authorization` header and the name of a query parameter.
 */
export function misplacedKeyDetail(
  authorization: string | string[] | undefined,
  url: string,
): string | null {
  const found: string[] = [];
  const header = joined(authorization)?.trim();
  if (header !== undefined && header !== "") {
    const scheme = AUTH_SCHEME.exec(header)?.[1];
    if (header.startsWith(KEY_PREFIX)) {
      found.push("the Authorization header holds a key without the 'Bearer' scheme");
    } else if (scheme !== undefined) {
      found.push(
        `the Authorization header's scheme is '${scheme}', which this service does not read`,
      );
    } else {
      found.push("the Authorization header is not 'Bearer <key>'");
    }
  }
  const query = url.indexOf("?");
  if (query >= 0) {
    const names = new Set<string>();
    for (const [name, value] of new URLSearchParams(url.slice(query + 1))) {
      if (KEY_QUERY_PARAMETERS.has(name.toLowerCase()) || value.startsWith(KEY_PREFIX)) {
        names.add(PLAIN_NAME.test(name) ? `'${name}'` : "a parameter holding a key");
      }
    }
    if (names.size > 0) {
      found.push(
        `the query string has ${[...names].join(", ")}, but keys are read only from headers, never from URLs (which end up in logs and browser histories)`,
      );
    }
  }
  return found.length === 0 ? null : `${found.join("; ")}; ${HOW_TO_SEND}`;
}

function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}

function checkNewKeyOptions(options: NewKeyOptions): void {
  if (
    !NAME_PATTERN.test(options.name) ||
    options.name.startsWith(KEY_PREFIX) ||
    options.name.startsWith(EVALUATION_NAME_PREFIX)
  ) {
    throw new KeyOptionError(
      `a key name is 1–64 characters of A–Z a–z 0–9 . _ -, starts with a letter or digit, and does not start with '${KEY_PREFIX}' or '${EVALUATION_NAME_PREFIX}' (evaluation keys' names)`,
    );
  }
  if (options.plan !== undefined && !PLAN_PATTERN.test(options.plan)) {
    throw new KeyOptionError("a plan is 1–32 characters of a–z 0–9 _ -, starting with a–z or 0–9");
  }
  if (options.plan === EVALUATION_PLAN) {
    throw new KeyOptionError(
      `the plan '${EVALUATION_PLAN}' is reserved for self-served evaluation keys, which are never billed`,
    );
  }
  const cap = options.dailyCap;
  if (cap !== undefined && cap !== null && (!Number.isSafeInteger(cap) || cap < 0)) {
    throw new KeyOptionError("a daily cap is a whole number ≥ 0");
  }
}

/** Version 1 for a standard key without expiry (the bytes it always had), else version 2. */
function recordBytes(key: ApiKey): Buffer {
  const original = key.kind === "standard" && key.expiresAt === null;
  const members: [string, JsonValue][] = [
    ["version", original ? RECORD_VERSION : RECORD_VERSION_KINDS],
    ["sha256", key.sha256],
    ["name", key.name],
    ["plan", key.plan],
    ["daily_cap", key.dailyCap],
    ["created_at", key.createdAt],
    ["revoked_at", key.revokedAt],
  ];
  if (!original) members.push(["kind", key.kind], ["expires_at", key.expiresAt]);
  return canonicalBytes(new Map<string, JsonValue>(members));
}

function parseObject(bytes: Uint8Array, what: string, versions: readonly number[]): JsonObject {
  let value: JsonValue;
  try {
    value = parseJson(bytes);
  } catch (error) {
    if (error instanceof StrictJsonError) throw new KeyStoreError(`${what}: ${error.message}`);
    throw error;
  }
  const version = isObject(value) ? value.get("version") : undefined;
  if (!isObject(value) || typeof version !== "number" || !versions.includes(version)) {
    throw new KeyStoreError(`${what} is not a version ${versions.join(" or ")} record`);
  }
  return value;
}

function stringMember(object: JsonObject, name: string, what: string): string {
  const value = object.get(name);
  if (typeof value !== "string") throw new KeyStoreError(`${what} has no string '${name}'`);
  return value;
}

/** Version 1 records are standard keys without expiry; version 2 says both. */
function kindAndExpiry(object: JsonObject, what: string): Pick<ApiKey, "kind" | "expiresAt"> {
  if (object.get("version") === RECORD_VERSION) return { kind: "standard", expiresAt: null };
  const kind = object.get("kind");
  const expiresAt = object.get("expires_at");
  if (kind !== "standard" && kind !== "evaluation") {
    throw new KeyStoreError(`${what} has an unknown kind`);
  }
  if (expiresAt !== null && !(typeof expiresAt === "string" && WHOLE_SECONDS.test(expiresAt))) {
    throw new KeyStoreError(`${what} has an unusable expires_at`);
  }
  if (kind === "evaluation" && expiresAt === null) {
    throw new KeyStoreError(`${what} is an evaluation key without expiry`);
  }
  return { kind, expiresAt };
}

function parseRecord(bytes: Uint8Array, id: string): ApiKey {
  const what = `key record ${id}`;
  const object = parseObject(bytes, what, [RECORD_VERSION, RECORD_VERSION_KINDS]);
  const sha256 = stringMember(object, "sha256", what);
  const dailyCap = object.get("daily_cap");
  const revokedAt = object.get("revoked_at");
  if (sha256 !== id) throw new KeyStoreError(`${what} names another hash`);
  if (
    dailyCap !== null &&
    !(typeof dailyCap === "number" && Number.isSafeInteger(dailyCap) && dailyCap >= 0)
  ) {
    throw new KeyStoreError(`${what} has an unusable daily_cap`);
  }
  if (revokedAt !== null && typeof revokedAt !== "string") {
    throw new KeyStoreError(`${what} has an unusable revoked_at`);
  }
  return {
    id: keyIdOf(sha256),
    sha256,
    name: stringMember(object, "name", what),
    plan: stringMember(object, "plan", what),
    dailyCap,
    createdAt: stringMember(object, "created_at", what),
    revokedAt,
    ...kindAndExpiry(object, what),
  };
}

interface NameClaim {
  sha256: string;
  claimedAtMs: number;
}

function claimBytes(name: string, sha256: string, claimedAtMs: number): Buffer {
  return canonicalBytes(
    new Map<string, JsonValue>([
      ["version", CLAIM_VERSION],
      ["name", name],
      ["sha256", sha256],
      ["claimed_at_ms", claimedAtMs],
    ]),
  );
}

function parseClaim(bytes: Uint8Array, name: string): NameClaim {
  const what = `name claim '${name}'`;
  const object = parseObject(bytes, what, [CLAIM_VERSION]);
  const claimedAtMs = object.get("claimed_at_ms");
  if (typeof claimedAtMs !== "number") throw new KeyStoreError(`${what} has no claimed_at_ms`);
  return { sha256: stringMember(object, "sha256", what), claimedAtMs };
}

export interface KeyStoreOptions {
  /** The cap of keys created without one (`KEY_DAILY_CAP`). */
  defaultDailyCap: number;
  /** How long a live record may be reused; 0 reads the store on every authentication. */
  cacheMs?: number;
  maxCachedKeys?: number;
  now?: () => number;
}

interface CachedKey {
  key: ApiKey;
  /** Clock time after which the record must be read again (never, once revoked). */
  freshUntil: number;
}

export class KeyStore {
  readonly #store: DocumentStore;
  readonly #defaultDailyCap: number;
  readonly #cacheMs: number;
  readonly #maxCachedKeys: number;
  readonly #now: () => number;
  /** Insertion-ordered, so the first entry is the oldest and is evicted first. */
  readonly #cache = new Map<string, CachedKey>();

  constructor(store: DocumentStore, options: KeyStoreOptions) {
    this.#store = store;
    this.#defaultDailyCap = options.defaultDailyCap;
    this.#cacheMs = options.cacheMs ?? KEY_CACHE_MS;
    this.#maxCachedKeys = options.maxCachedKeys ?? DEFAULT_MAX_CACHED_KEYS;
    this.#now = options.now ?? Date.now;
  }

  get defaultDailyCap(): number {
    return this.#defaultDailyCap;
  }

  /** Creates a key. The clear key is in the result and nowhere else. */
  async create(options: NewKeyOptions): Promise<CreatedKey> {
    checkNewKeyOptions(options);
    const key = generateKey();
    const sha256 = hashKey(key);
    await this.#claimName(options.name, sha256);
    return this.#write(key, {
      id: keyIdOf(sha256),
      sha256,
      name: options.name,
      plan: options.plan ?? DEFAULT_PLAN,
      dailyCap: options.dailyCap ?? null,
      createdAt: formatUtcSeconds(new Date(this.#now())),
      revokedAt: null,
      kind: "standard",
      expiresAt: null,
    });
  }

  /**
   * Creates an evaluation key (`POST /keys/evaluation`): named `evaluation-<id>`, plan
   * `evaluation`, with its own daily cap and an expiry `lifetimeMs` from now (whole seconds).
   */
  async createEvaluation(options: NewEvaluationKeyOptions): Promise<CreatedKey> {
    const { dailyCap, lifetimeMs } = options;
    if (!Number.isSafeInteger(dailyCap) || dailyCap < 0) {
      throw new KeyOptionError("a daily cap is a whole number ≥ 0");
    }
    if (!Number.isSafeInteger(lifetimeMs) || lifetimeMs < 1000) {
      throw new KeyOptionError("an evaluation key lives at least one second");
    }
    const key = generateKey();
    const sha256 = hashKey(key);
    const id = keyIdOf(sha256);
    const name = `${EVALUATION_NAME_PREFIX}${id}`;
    await this.#claimName(name, sha256);
    const nowSeconds = Math.floor(this.#now() / 1000);
    const lifetimeSeconds = Math.floor(lifetimeMs / 1000);
    return this.#write(key, {
      id,
      sha256,
      name,
      plan: EVALUATION_PLAN,
      dailyCap,
      createdAt: formatUtcSeconds(new Date(nowSeconds * 1000)),
      revokedAt: null,
      kind: "evaluation",
      expiresAt: formatUtcSeconds(new Date((nowSeconds + lifetimeSeconds) * 1000)),
    });
  }

  async #write(key: string, record: ApiKey): Promise<CreatedKey> {
    const result = await this.#store.create("keys", record.sha256, recordBytes(record));
    // 192 random bits: a second key with this hash is not a case to handle, only to refuse.
    if (!result.created) throw new KeyStoreError("a key with this hash already exists");
    return { key, record };
  }

  /** Takes the name for `sha256`, unless a key that is not revoked holds it. */
  async #claimName(name: string, sha256: string): Promise<void> {
    const claimId = `${NAME_CLAIM_PREFIX}${name}`;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
      const now = this.#now();
      const mine = claimBytes(name, sha256, now);
      const created = await this.#store.create("keys", claimId, mine);
      if (created.created) return;
      const claim = parseClaim(created.stored, name);
      const holder = await this.#read(claim.sha256);
      if (holder !== null && holder.revokedAt === null) {
        throw new KeyNameTakenError(`a key named '${name}' exists (id ${holder.id})`);
      }
      // A claim without its record is either being completed right now or was abandoned.
      if (holder === null && now - claim.claimedAtMs < STALE_CLAIM_MS) {
        throw new KeyNameTakenError(`a key named '${name}' is being created`);
      }
      if (await this.#store.replace("keys", claimId, created.stored, mine)) return;
    }
    throw new KeyStoreError(`the name '${name}' kept changing while it was being claimed`);
  }

  async #read(sha256: string): Promise<ApiKey | null> {
    const bytes = await this.#store.get("keys", sha256);
    return bytes === null ? null : parseRecord(bytes, sha256);
  }

  /** Every key, revoked ones included, oldest first. */
  async list(): Promise<ApiKey[]> {
    const ids = (await this.#store.list("keys")).filter((id) => HASH_ID_PATTERN.test(id));
    const keys: ApiKey[] = [];
    for (const id of ids) {
      const key = await this.#read(id);
      if (key !== null) keys.push(key);
    }
    return keys.sort(
      (a, b) => compare(a.createdAt, b.createdAt) || compare(a.name, b.name) || compare(a.id, b.id),
    );
  }

  /**
   * Revokes the key given in clear, or the key that is not revoked and carries this name.
   * Revoking is a compare-and-set of the record, retried if it changed meanwhile.
   */
  async revoke(keyOrName: string): Promise<RevokeResult> {
    const sha256 = await this.#resolve(keyOrName);
    if (sha256 === null) return { status: "not_found" };
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
      const bytes = await this.#store.get("keys", sha256);
      if (bytes === null) return { status: "not_found" };
      const key = parseRecord(bytes, sha256);
      if (key.revokedAt !== null) return { status: "already_revoked", key };
      const revoked: ApiKey = { ...key, revokedAt: formatUtcSeconds(new Date(this.#now())) };
      if (await this.#store.replace("keys", sha256, bytes, recordBytes(revoked))) {
        this.#cache.delete(sha256);
        return { status: "revoked", key: revoked };
      }
    }
    throw new KeyStoreError("the key kept changing while it was being revoked");
  }

  async #resolve(keyOrName: string): Promise<string | null> {
    if (keyOrName.startsWith(KEY_PREFIX)) {
      return isWellFormedKey(keyOrName) ? hashKey(keyOrName) : null;
    }
    const claim = await this.#store.get("keys", `${NAME_CLAIM_PREFIX}${keyOrName}`);
    if (claim === null) return null;
    const { sha256 } = parseClaim(claim, keyOrName);
    const holder = await this.#read(sha256);
    // A released name (its key revoked) names no key any more.
    return holder !== null && holder.revokedAt === null ? sha256 : null;
  }

  /**
   * The record of a presented key, or why it is refused. The lookup is by hash; the stored
   * hash is then compared with the computed one in constant time, so the decision never
   * depends on a variable-time comparison of secret-derived bytes.
   */
  async authenticate(presented: string): Promise<Authentication> {
    if (!isWellFormedKey(presented)) return { ok: false, error: "invalid_key", cause: "malformed" };
    // One-shot: no Hash object per request (issue 33, the main thread's per-request cost).
    const digest = hash("sha256", presented, "buffer");
    const sha256 = digest.toString("hex");
    const key = await this.#lookup(sha256);
    if (key === null || !timingSafeEqual(Buffer.from(key.sha256, "hex"), digest)) {
      return { ok: false, error: "invalid_key", cause: "unknown" };
    }
    if (key.revokedAt !== null) return { ok: false, error: "invalid_key", cause: "revoked" };
    // Checked on every request, cached record or not: the cache window never extends a key.
    if (isExpired(key, this.#now())) return { ok: false, error: "key_expired", key };
    return { ok: true, key, dailyCap: dailyCapOf(key, this.#defaultDailyCap) };
  }

  /**
   * The reads under way, by hash: the requests that find a record stale together (every
   * connection of a busy key, once a second) share one read of the store rather than each
   * making its own (issue 33). A read started before a request arrived is as fresh as the
   * cache would have been.
   */
  readonly #reading = new Map<string, Promise<ApiKey | null>>();

  #lookup(sha256: string): Promise<ApiKey | null> {
    const cached = this.#cache.get(sha256);
    if (cached !== undefined && this.#now() < cached.freshUntil) return Promise.resolve(cached.key);
    let reading = this.#reading.get(sha256);
    if (reading === undefined) {
      reading = this.#refresh(sha256).finally(() => this.#reading.delete(sha256));
      this.#reading.set(sha256, reading);
    }
    return reading;
  }

  async #refresh(sha256: string): Promise<ApiKey | null> {
    const now = this.#now();
    const key = await this.#read(sha256);
    this.#cache.delete(sha256);
    if (key !== null && (this.#cacheMs > 0 || key.revokedAt !== null)) {
      const freshUntil = key.revokedAt === null ? now + this.#cacheMs : Number.POSITIVE_INFINITY;
      this.#cache.set(sha256, { key, freshUntil });
      for (const oldest of this.#cache.keys()) {
        if (this.#cache.size <= this.#maxCachedKeys) break;
        this.#cache.delete(oldest);
      }
    }
    return key;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
