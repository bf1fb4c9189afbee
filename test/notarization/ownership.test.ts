/**
 * Notarization quotas and expiry over both document stores (files, PostgreSQL in a private
 * schema): a principal's quota, an evaluation key's smaller one and the evaluation keys'
 * shared tenant; a statement stored twice charged once; expiry removing old statements and
 * giving their bytes back; statements stored before the index adopted; and `receiptd
 * notarization expire` acting on the configured store.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { evaluationPrincipal, keyPrincipal } from "../../src/access/principal.js";
import { main as notarizationCli } from "../../src/cli/notarization.js";
import {
  evaluationNotarizationUsage,
  expireNotarizations,
  type NotarizationQuotas,
  notarizationUsage,
  STORED_PREFIX,
  storeOwnedNotarization,
} from "../../src/notarization/ownership.js";
import { NOTARIZATIONS } from "../../src/notarization/store.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { PgDocumentStore } from "../../src/storage/pg-document-store.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";

const DAY_MS = 86_400_000;
const NOW = new Date("2026-11-28T12:00:00Z");
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY_MS);
/** Every statement of these tests is 100 bytes. */
const SIZE = 100;
const QUOTAS: NotarizationQuotas = {
  principalBytes: 3 * SIZE,
  evaluationKeyBytes: 2 * SIZE,
  evaluationBytes: 3 * SIZE,
};

function statement(): { id: string; bytes: Buffer } {
  const id = `sha256:${randomBytes(32).toString("hex")}`;
  const bytes = Buffer.alloc(SIZE, 0x20);
  bytes.write(`{"id":"${id}"}`);
  return { id, bytes };
}

const ownerId = () => randomBytes(4).toString("hex");

interface Opened {
  store: DocumentStore;
  env: Record<string, string>;
  dispose(): Promise<void>;
}

const STORES: [string, () => Promise<Opened>][] = [
  [
    "FsDocumentStore",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "receiptd-notarization-expiry-"));
      const store = new FsDocumentStore(dir);
      return {
        store,
        env: { DATA_DIR: dir },
        async dispose() {
          await store.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    "PgDocumentStore",
    async () => {
      const schema = privateSchema();
      const store = await PgDocumentStore.open({ url: DATABASE_URL, schema });
      const dir = await mkdtemp(join(tmpdir(), "receiptd-notarization-expiry-"));
      return {
        store,
        env: { DATA_DIR: dir, DATABASE_URL, DATABASE_SCHEMA: schema },
        async dispose() {
          await store.close();
          await dropSchema(schema);
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  ],
];

for (const [name, open] of STORES) {
  describe(`notarization quotas and expiry on ${name}`, () => {
    let opened: Opened;
    let store: DocumentStore;
    before(async () => {
      opened = await open();
      store = opened.store;
    });
    after(() => opened.dispose());

    const put = (owner: string, at: Date = NOW, one = statement()) =>
      storeOwnedNotarization(store, one.id, one.bytes, owner, QUOTAS, at);

    test("a key's quota refuses the statement that would pass it; a repeat costs nothing", async () => {
      const owner = keyPrincipal(ownerId());
      const first = statement();
      assert.ok("created" in (await put(owner, NOW, first)));
      // The same statement again (a retried write): stored once, charged once.
      const again = await put(owner, NOW, first);
      assert.deepEqual(again, { created: false, stored: first.bytes });
      await put(owner);
      await put(owner);
      assert.equal(await notarizationUsage(store, owner), 3 * SIZE);
      const over = statement();
      assert.deepEqual(await put(owner, NOW, over), {
        quotaExceeded: "principal",
        quotaBytes: 3 * SIZE,
        heldBytes: 3 * SIZE,
      });
      assert.equal(await store.get(NOTARIZATIONS, over.id), null);
      assert.equal(await notarizationUsage(store, owner), 3 * SIZE);
    });

    test("evaluation keys get a smaller quota each, and share one tenant's", async () => {
      const first = evaluationPrincipal(ownerId());
      assert.ok("created" in (await put(first)));
      assert.ok("created" in (await put(first)));
      assert.deepEqual(await put(first), {
        quotaExceeded: "principal",
        quotaBytes: 2 * SIZE,
        heldBytes: 2 * SIZE,
      });
      // A second key has its own 200 bytes, but the tenant of all evaluation keys holds 300.
      const second = evaluationPrincipal(ownerId());
      assert.ok("created" in (await put(second)));
      const refused = statement();
      assert.deepEqual(await put(second, NOW, refused), {
        quotaExceeded: "tenant",
        quotaBytes: 3 * SIZE,
        heldBytes: 3 * SIZE,
      });
      // Refused by the tenant: the key's own charge was given back.
      assert.equal(await notarizationUsage(store, second), SIZE);
      assert.equal(await evaluationNotarizationUsage(store), 3 * SIZE);
    });

    test("expiry removes statements past the TTL and gives their bytes back", async () => {
      const owner = keyPrincipal(ownerId());
      const old = statement();
      const young = statement();
      await put(owner, daysAgo(31), old);
      await put(owner, daysAgo(29), young);
      assert.equal(await notarizationUsage(store, owner), 2 * SIZE);
      // A statement stored before quotas existed has no index entry: adopted, dated today.
      const legacy = statement();
      await store.create(NOTARIZATIONS, legacy.id, legacy.bytes);

      const dry = await expireNotarizations(store, { ttlDays: 30, now: NOW, dryRun: true });
      assert.ok(dry.expired >= 1);
      assert.equal(dry.adopted, 1);
      assert.notEqual(await store.get(NOTARIZATIONS, old.id), null);

      const report = await expireNotarizations(store, { ttlDays: 30, now: NOW });
      assert.equal(report.expired, dry.expired);
      assert.equal(report.freedBytes, dry.freedBytes);
      assert.equal(await store.get(NOTARIZATIONS, old.id), null);
      assert.notEqual(await store.get(NOTARIZATIONS, young.id), null);
      assert.notEqual(await store.get(NOTARIZATIONS, legacy.id), null);
      assert.equal(await notarizationUsage(store, owner), SIZE);
      const index = await store.list(NOTARIZATIONS, STORED_PREFIX);
      assert.ok(!index.some((id) => id.endsWith(old.id)));
      assert.ok(index.some((id) => id.endsWith(legacy.id)));
      // Freed bytes can be used again.
      assert.ok("created" in (await put(owner)));
      // TTL 0: nothing expires, however old.
      const kept = await expireNotarizations(store, { ttlDays: 0, now: daysAgo(-400) });
      assert.equal(kept.expired, 0);
    });

    test("receiptd notarization expire acts on the configured store", async () => {
      const owner = keyPrincipal(ownerId());
      const old = statement();
      await put(owner, daysAgo(10), old);
      const run = async (argv: string[]) => {
        let out = "";
        let err = "";
        const io = {
          stdout: (text: string) => {
            out += text;
          },
          stderr: (text: string) => {
            err += text;
          },
        };
        const code = await notarizationCli(argv, io, {
          ...opened.env,
          NOTARIZATION_TTL_DAYS: "5",
        });
        return { code, out, err };
      };
      const dry = await run(["expire", "--dry-run"]);
      assert.equal(dry.code, 0, dry.err);
      const dryReport = JSON.parse(dry.out);
      assert.equal(dryReport.dry_run, true);
      assert.equal(dryReport.ttl_days, 5);
      assert.ok(dryReport.expired >= 1);
      assert.notEqual(await store.get(NOTARIZATIONS, old.id), null);
      const real = await run(["expire"]);
      assert.equal(real.code, 0, real.err);
      assert.equal(JSON.parse(real.out).expired, dryReport.expired);
      assert.equal(await store.get(NOTARIZATIONS, old.id), null);
      assert.equal((await run(["expire", "--key", "did:key:z6Mk"])).code, 2);
    });
  });
}
