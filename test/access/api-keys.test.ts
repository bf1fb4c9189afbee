/** API keys over the embedded document store: format, hashing, names, revocation, lookup. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  KEY_CACHE_MS,
  KeyNameTakenError,
  KeyOptionError,
  KeyStore,
  misplacedKeyDetail,
  presentedKey,
} from "../../src/access/api-keys.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { keyStoreContract } from "./key-store-contract.js";

keyStoreContract("FsDocumentStore", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "receiptd-keys-contract-"));
  const store = new FsDocumentStore(dataDir);
  return {
    store,
    async dispose() {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
});

async function listFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

describe("KeyStore", () => {
  let dataDir: string;
  let store: FsDocumentStore;
  const clock = { now: Date.parse("2026-11-21T10:00:00Z") };
  let keys: KeyStore;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-keys-"));
    store = new FsDocumentStore(dataDir);
    keys = new KeyStore(store, { defaultDailyCap: 1000, now: () => clock.now });
  });
  after(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test("a new key is svc_ + 48 lowercase hex; its record names it by hash", async () => {
    const { key, record } = await keys.create({ name: "acme", plan: "pro", dailyCap: 50 });
    assert.match(key, /^svc_[0-9a-f]{48}$/);
    const sha256 = createHash("sha256").update(key).digest("hex");
    assert.deepEqual(record, {
      id: sha256.slice(0, 12),
      sha256,
      name: "acme",
      plan: "pro",
      dailyCap: 50,
      createdAt: "2026-11-21T10:00:00Z",
      revokedAt: null,
      kind: "standard",
      expiresAt: null,
    });
    // A standard key is still written as the version 1 record it always was.
    const stored = await store.get("keys", sha256);
    assert.equal(
      Buffer.from(stored ?? []).toString("utf8"),
      `{"created_at":"2026-11-21T10:00:00Z","daily_cap":50,"name":"acme","plan":"pro","revoked_at":null,"sha256":"${sha256}","version":1}`,
    );
  });

  test("the clear key is nowhere in the store's files", async () => {
    const created = await Promise.all([
      keys.create({ name: "scan-1" }),
      keys.create({ name: "scan-2", dailyCap: 0 }),
    ]);
    const files = await listFiles(dataDir);
    assert.ok(files.length >= 4, files.join("\n"));
    for (const file of files) {
      const content = await readFile(file, "latin1");
      for (const { key } of created) {
        assert.equal(content.includes(key), false, `${file} holds a key in clear`);
        assert.equal(content.includes(key.slice(4)), false, `${file} holds a key's hex`);
      }
    }
  });

  test("authenticate: valid, unknown, malformed and revoked keys", async () => {
    const { key, record } = await keys.create({ name: "auth" });
    assert.deepEqual(await keys.authenticate(key), { ok: true, key: record, dailyCap: 1000 });
    const unknown = `svc_${"0".repeat(48)}`;
    assert.deepEqual(await keys.authenticate(unknown), {
      ok: false,
      error: "invalid_key",
      cause: "unknown",
    });
    for (const malformed of [
      "",
      "svc_",
      key.toUpperCase(),
      `${key}0`,
      key.slice(0, -1),
      ` ${key}`,
    ]) {
      assert.deepEqual(await keys.authenticate(malformed), {
        ok: false,
        error: "invalid_key",
        cause: "malformed",
      });
    }
    const revoked = await keys.revoke(key);
    assert.equal(revoked.status, "revoked");
    assert.deepEqual(await keys.authenticate(key), {
      ok: false,
      error: "invalid_key",
      cause: "revoked",
    });
  });

  test("a key's own cap wins over the default", async () => {
    const { key } = await keys.create({ name: "capped", dailyCap: 7 });
    const result = await keys.authenticate(key);
    assert.equal(result.ok && result.dailyCap, 7);
  });

  test("names are unique among keys that are not revoked", async () => {
    const first = await keys.create({ name: "unique" });
    await assert.rejects(keys.create({ name: "unique" }), KeyNameTakenError);
    assert.equal((await keys.revoke("unique")).status, "revoked");
    const second = await keys.create({ name: "unique" });
    assert.notEqual(second.record.sha256, first.record.sha256);
    // The name now means the new key; the old one stays revoked.
    assert.deepEqual(await keys.revoke("unique"), {
      status: "revoked",
      key: { ...second.record, revokedAt: "2026-11-21T10:00:00Z" },
    });
    assert.deepEqual(await keys.revoke("unique"), { status: "not_found" });
    assert.equal((await keys.revoke(first.key)).status, "already_revoked");
  });

  test("concurrent creates of one name: exactly one wins", async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 6 }, () => keys.create({ name: "race" })),
    );
    assert.equal(outcomes.filter((outcome) => outcome.status === "fulfilled").length, 1);
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") assert.ok(outcome.reason instanceof KeyNameTakenError);
    }
    assert.equal((await keys.list()).filter((key) => key.name === "race").length, 1);
  });

  test("revoke of something unknown is not_found", async () => {
    assert.deepEqual(await keys.revoke("nobody"), { status: "not_found" });
    assert.deepEqual(await keys.revoke(`svc_${"f".repeat(48)}`), { status: "not_found" });
    assert.deepEqual(await keys.revoke("svc_short"), { status: "not_found" });
  });

  test("revoke by key records when, once", async () => {
    const { key } = await keys.create({ name: "dated" });
    clock.now += 60_000;
    const result = await keys.revoke(key);
    assert.equal(result.status === "revoked" && result.key.revokedAt, "2026-11-21T10:01:00Z");
    clock.now += 60_000;
    const again = await keys.revoke(key);
    assert.equal(again.status === "already_revoked" && again.key.revokedAt, "2026-11-21T10:01:00Z");
  });

  test("list shows every key without the key itself, oldest first", async () => {
    const listed = await keys.list();
    assert.ok(listed.length >= 8);
    for (const key of listed) {
      assert.deepEqual(Object.keys(key).sort(), [
        "createdAt",
        "dailyCap",
        "expiresAt",
        "id",
        "kind",
        "name",
        "plan",
        "revokedAt",
        "sha256",
      ]);
      assert.match(key.sha256, /^[0-9a-f]{64}$/);
      assert.equal(key.id, key.sha256.slice(0, 12));
    }
    for (let index = 1; index < listed.length; index += 1) {
      assert.ok((listed[index - 1]?.createdAt ?? "") <= (listed[index]?.createdAt ?? ""));
    }
    assert.equal(listed.find((key) => key.name === "scan-2")?.dailyCap, 0);
  });

  test("a claim whose creator died before writing the key is taken over after a minute", async () => {
    const ghost = "e".repeat(64);
    const claim = `{"claimed_at_ms":${clock.now},"name":"ghost","sha256":"${ghost}","version":1}`;
    await store.create("keys", "name:ghost", new TextEncoder().encode(claim));
    await assert.rejects(keys.create({ name: "ghost" }), KeyNameTakenError);
    clock.now += 60_000;
    const { record } = await keys.create({ name: "ghost" });
    assert.equal((await keys.revoke("ghost")).status, "revoked");
    assert.equal(record.name, "ghost");
  });

  test("bad names, plans and caps are refused (evaluation keys' names and plan are reserved)", async () => {
    for (const options of [
      { name: "" },
      { name: "has space" },
      { name: "svc_lookalike" },
      { name: "evaluation-0123456789ab" },
      { name: "ok", plan: "evaluation" },
      { name: "x".repeat(65) },
      { name: "-leading" },
      { name: "ok", plan: "Pro" },
      { name: "ok", dailyCap: -1 },
      { name: "ok", dailyCap: 1.5 },
    ]) {
      await assert.rejects(keys.create(options), KeyOptionError, JSON.stringify(options));
    }
  });
});

describe("KeyStore lookups and the revocation window", () => {
  test("a live record is reused for at most the cache window; a new key works at once", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "receiptd-keys-cache-"));
    const clock = { now: Date.parse("2026-11-21T10:00:00Z") };
    const serverStore = new FsDocumentStore(dataDir);
    const cliStore = new FsDocumentStore(dataDir);
    try {
      const server = new KeyStore(serverStore, { defaultDailyCap: 5, now: () => clock.now });
      const cli = new KeyStore(cliStore, { defaultDailyCap: 5, now: () => clock.now });
      const unknownYet = `svc_${"a".repeat(48)}`;
      assert.equal((await server.authenticate(unknownYet)).ok, false);

      const { key } = await cli.create({ name: "window" });
      assert.equal((await server.authenticate(key)).ok, true, "a new key works at once");

      await cli.revoke(key);
      clock.now += KEY_CACHE_MS - 1;
      assert.equal((await server.authenticate(key)).ok, true, "still inside the window");
      clock.now += 1;
      assert.deepEqual(await server.authenticate(key), {
        ok: false,
        error: "invalid_key",
        cause: "revoked",
      });
    } finally {
      await serverStore.close();
      await cliStore.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test("with cacheMs 0 every authentication reads the store", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "receiptd-keys-nocache-"));
    const serverStore = new FsDocumentStore(dataDir);
    try {
      const server = new KeyStore(serverStore, { defaultDailyCap: 5, cacheMs: 0 });
      const cli = new KeyStore(serverStore, { defaultDailyCap: 5 });
      const { key } = await cli.create({ name: "direct" });
      assert.equal((await server.authenticate(key)).ok, true);
      await cli.revoke("direct");
      assert.equal((await server.authenticate(key)).ok, false);
    } finally {
      await serverStore.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("presentedKey", () => {
  const key = `svc_${"1".repeat(48)}`;
  test("Bearer or X-SVC-Key, or none", () => {
    assert.equal(presentedKey({}), null);
    assert.equal(presentedKey({ authorization: `Bearer ${key}` }), key);
    assert.equal(presentedKey({ authorization: `bearer   ${key} ` }), key);
    assert.equal(presentedKey({ "x-svc-key": key }), key);
    assert.equal(presentedKey({ authorization: `Bearer ${key}`, "x-svc-key": key }), key);
  });

  test("another Authorization scheme is not a key; an empty Bearer is a malformed one", () => {
    assert.equal(presentedKey({ authorization: "Basic dXNlcjpwYXNz" }), null);
    assert.equal(presentedKey({ authorization: "Bearer" }), "");
  });

  test("two different keys are presented as neither", () => {
    const other = `svc_${"2".repeat(48)}`;
    assert.equal(
      presentedKey({ authorization: `Bearer ${key}`, "x-svc-key": other }),
      `${key}, ${other}`,
    );
    assert.equal(presentedKey({ "x-svc-key": [key, other] }), `${key}, ${other}`);
  });
});

describe("misplacedKeyDetail", () => {
  const key = `svc_${"3".repeat(48)}`;
  const HOW = "send it as 'Authorization: Bearer svc_…' or 'X-SVC-Key: svc_…'";

  test("nothing that looks like a key: null", () => {
    assert.equal(misplacedKeyDetail(undefined, "/verify"), null);
    assert.equal(misplacedKeyDetail(undefined, "/verify?receipt=1&cache=1"), null);
    assert.equal(misplacedKeyDetail("", "/verify?"), null);
  });

  test("Authorization: a key without Bearer, another scheme, something else", () => {
    assert.equal(
      misplacedKeyDetail(key, "/verify"),
      `the Authorization header holds a key without the 'Bearer' scheme; ${HOW}`,
    );
    assert.equal(
      misplacedKeyDetail(`Token ${key}`, "/verify"),
      `the Authorization header's scheme is 'Token', which this service does not read; ${HOW}`,
    );
    assert.equal(
      misplacedKeyDetail(`"${key}"`, "/verify"),
      `the Authorization header is not 'Bearer <key>'; ${HOW}`,
    );
  });

  test("the query string: parameters by name (any case) or by a svc_ value, never the key", () => {
    const detail = misplacedKeyDetail(undefined, `/verify?API_KEY=x&k=${key}&%3C%3E=${key}`);
    assert.equal(
      detail,
      `the query string has 'API_KEY', 'k', a parameter holding a key, but keys are read only from headers, never from URLs (which end up in logs and browser histories); ${HOW}`,
    );
    const both = misplacedKeyDetail(key, `/verify?token=${key}`) ?? "";
    assert.ok(!both.includes(key));
    assert.match(both, /^the Authorization header holds .*; the query string has 'token'/);
  });
});
