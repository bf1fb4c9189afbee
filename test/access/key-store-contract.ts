/**
 * The key store over each mode's document store (one contract suite, run on the file store
 * and on PostgreSQL): records of the previous release still read and keep their bytes, and
 * evaluation keys are written, found, listed, expired and revoked alike in both.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { KEY_CACHE_MS, KeyStore, KeyStoreError } from "../../src/access/api-keys.js";
import type { DocumentStore } from "../../src/storage/document-store.js";

export interface KeyStoreFixture {
  store: DocumentStore;
  /** Closes the store and removes what the fixture created. */
  dispose(): Promise<void>;
}

const T0 = Date.parse("2026-11-21T10:00:00Z");
const DAY_MS = 86_400_000;
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (value: Uint8Array | null) =>
  value === null ? null : new TextDecoder().decode(value);
const sha256 = (key: string) => createHash("sha256").update(key).digest("hex");

export function keyStoreContract(name: string, open: () => Promise<KeyStoreFixture>): void {
  describe(`KeyStore records: ${name}`, () => {
    let fixture: KeyStoreFixture;
    let store: DocumentStore;
    const clock = { now: T0 };
    let keys: KeyStore;
    before(async () => {
      fixture = await open();
      store = fixture.store;
      keys = new KeyStore(store, { defaultDailyCap: 1000, now: () => clock.now });
    });
    after(() => fixture.dispose());

    test("a record of the previous release (version 1) is a standard key that never expires", async () => {
      const key = `svc_${"1".repeat(48)}`;
      const hash = sha256(key);
      const record = `{"created_at":"2025-01-02T03:04:05Z","daily_cap":null,"name":"legacy","plan":"gold","revoked_at":null,"sha256":"${hash}","version":1}`;
      await store.create("keys", hash, bytes(record));
      await store.create(
        "keys",
        "name:legacy",
        bytes(`{"claimed_at_ms":0,"name":"legacy","sha256":"${hash}","version":1}`),
      );
      clock.now = T0 + 3650 * DAY_MS;
      const authentication = await keys.authenticate(key);
      clock.now = T0;
      assert.ok(authentication.ok);
      assert.equal(authentication.key.kind, "standard");
      assert.equal(authentication.key.expiresAt, null);
      assert.equal(authentication.dailyCap, 1000);
      const listed = (await keys.list()).find((entry) => entry.sha256 === hash);
      assert.equal(listed?.plan, "gold");

      // Revoking it rewrites it in its own version: a server of the previous release reads it.
      assert.equal((await keys.revoke("legacy")).status, "revoked");
      assert.equal(
        text(await store.get("keys", hash)),
        record.replace('"revoked_at":null', '"revoked_at":"2026-11-21T10:00:00Z"'),
      );
    });

    test("a standard key is still written as a version 1 record", async () => {
      const { record } = await keys.create({ name: "still-v1", dailyCap: 5 });
      assert.equal(
        text(await store.get("keys", record.sha256)),
        `{"created_at":"2026-11-21T10:00:00Z","daily_cap":5,"name":"still-v1","plan":"standard","revoked_at":null,"sha256":"${record.sha256}","version":1}`,
      );
    });

    test("an evaluation key is a version 2 record: kind, expiry, its own name and plan", async () => {
      clock.now = T0 + 999;
      const { key, record } = await keys.createEvaluation({ dailyCap: 50, lifetimeMs: 7_200_500 });
      clock.now = T0;
      assert.equal(record.sha256, sha256(key));
      assert.deepEqual(record, {
        id: record.sha256.slice(0, 12),
        sha256: record.sha256,
        name: `evaluation-${record.id}`,
        plan: "evaluation",
        dailyCap: 50,
        createdAt: "2026-11-21T10:00:00Z",
        revokedAt: null,
        kind: "evaluation",
        expiresAt: "2026-11-21T12:00:00Z",
      });
      assert.equal(
        text(await store.get("keys", record.sha256)),
        `{"created_at":"2026-11-21T10:00:00Z","daily_cap":50,"expires_at":"2026-11-21T12:00:00Z","kind":"evaluation","name":"evaluation-${record.id}","plan":"evaluation","revoked_at":null,"sha256":"${record.sha256}","version":2}`,
      );
      const listed = (await keys.list()).find((entry) => entry.id === record.id);
      assert.deepEqual(listed, record);
      // Only the hash is stored, never the key.
      for (const id of await store.list("keys")) {
        assert.equal(text(await store.get("keys", id))?.includes(key.slice(4)), false);
      }
    });

    test("an evaluation key works until its expiry, then key_expired, cached or not", async () => {
      const { key, record } = await keys.createEvaluation({ dailyCap: 3, lifetimeMs: 3_600_000 });
      const first = await keys.authenticate(key);
      assert.ok(first.ok);
      assert.equal(first.dailyCap, 3);
      clock.now = T0 + 3_600_000 - 1;
      assert.equal((await keys.authenticate(key)).ok, true);
      // Within the cache window of the last read: the expiry is still checked.
      clock.now = T0 + 3_600_000;
      assert.ok(clock.now - (T0 + 3_600_000 - 1) < KEY_CACHE_MS);
      assert.deepEqual(await keys.authenticate(key), {
        ok: false,
        error: "key_expired",
        key: record,
      });
      clock.now = T0;
    });

    test("an evaluation key is revoked by its name; revoked wins over expired", async () => {
      const { key, record } = await keys.createEvaluation({ dailyCap: 3, lifetimeMs: 3_600_000 });
      const revoked = await keys.revoke(record.name);
      assert.equal(revoked.status, "revoked");
      assert.equal(revoked.status === "revoked" && revoked.key.kind, "evaluation");
      assert.equal(revoked.status === "revoked" && revoked.key.expiresAt, record.expiresAt);
      clock.now = T0 + 2 * 3_600_000;
      assert.deepEqual(await keys.authenticate(key), {
        ok: false,
        error: "invalid_key",
        cause: "revoked",
      });
      clock.now = T0;
      assert.match(text(await store.get("keys", record.sha256)) ?? "", /"version":2}$/);
    });

    test("records the store cannot vouch for are refused, not guessed at", async () => {
      const cases = [
        ["version 3", (hash: string) => `{"sha256":"${hash}","version":3}`],
        [
          "an evaluation key without expiry",
          (hash: string) =>
            `{"created_at":"2026-11-21T10:00:00Z","daily_cap":5,"expires_at":null,"kind":"evaluation","name":"x","plan":"evaluation","revoked_at":null,"sha256":"${hash}","version":2}`,
        ],
        [
          "an unknown kind",
          (hash: string) =>
            `{"created_at":"2026-11-21T10:00:00Z","daily_cap":5,"expires_at":null,"kind":"trial","name":"x","plan":"x","revoked_at":null,"sha256":"${hash}","version":2}`,
        ],
        [
          "an expiry that is not a time",
          (hash: string) =>
            `{"created_at":"2026-11-21T10:00:00Z","daily_cap":5,"expires_at":"tomorrow","kind":"evaluation","name":"x","plan":"evaluation","revoked_at":null,"sha256":"${hash}","version":2}`,
        ],
      ] as const;
      for (const [index, [what, record]] of cases.entries()) {
        const key = `svc_${String(index + 2).repeat(48)}`;
        const hash = sha256(key);
        await store.create("keys", hash, bytes(record(hash)));
        await assert.rejects(keys.authenticate(key), KeyStoreError, what);
        await store.replace("keys", hash, bytes(record(hash)), bytes("{}"));
      }
    });
  });
}
