/**
 * Crystal expiry over both document stores (files, PostgreSQL in a private schema): what goes,
 * what a younger descendant keeps, lineages left whole, quota bytes returned, crystals stored
 * before the index adopted, and `receiptd crystals expire` acting on the configured store. A
 * child posted while its parent expires: whichever side goes second sees the other (issue 37).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { keyPrincipal } from "../../src/access/principal.js";
import { main as crystalsCli } from "../../src/cli/crystals.js";
import { sealCrystal, tenantHashOf } from "../../src/crystals/client.js";
import { expireCrystals } from "../../src/crystals/expiry.js";
import { lineageJson } from "../../src/crystals/lineage.js";
import {
  crystalDocumentId,
  lineageDocumentId,
  type PreparedCrystal,
  readCrystal,
  readLineageSummaries,
  STORED_PREFIX,
  storeCrystal,
} from "../../src/crystals/store.js";
import { prepareCrystalPost } from "../../src/service/endpoints/crystals/answer.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { PgDocumentStore } from "../../src/storage/pg-document-store.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";

const KEY = randomBytes(32);
const OWNER = keyPrincipal("e0e1e2e3");
const DAY_MS = 86_400_000;
const NOW = new Date("2026-11-26T12:00:00Z");
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY_MS);

function prepared(tenantHash: string, parentCrystalId: string | null = null): PreparedCrystal {
  const envelope = sealCrystal({
    plaintext: randomBytes(64),
    key: KEY,
    tenantHash,
    parentCrystalId,
  });
  const answer = prepareCrystalPost(Buffer.from(JSON.stringify(envelope)), {
    maxCiphertextBytes: 1 << 21,
  });
  assert.equal(answer.kind, "store", JSON.stringify(answer));
  return answer as PreparedCrystal;
}

async function usage(store: DocumentStore, id: string): Promise<number> {
  const bytes = await store.get("tenants", `usage/${id}`);
  return bytes === null
    ? 0
    : (JSON.parse(Buffer.from(bytes).toString("utf8")) as { bytes: number }).bytes;
}

interface Opened {
  store: DocumentStore;
  /** What `receiptd crystals expire` needs to act on this store. */
  env: Record<string, string>;
  dispose(): Promise<void>;
}

const STORES: [string, () => Promise<Opened>][] = [
  [
    "FsDocumentStore",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "receiptd-crystal-expiry-"));
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
      const dir = await mkdtemp(join(tmpdir(), "receiptd-crystal-expiry-"));
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

/**
 * `store`, with `hook` run once just before the first call that `when` picks: a deterministic
 * interleaving of a post and a sweep, as two processes could produce it.
 */
function interleaved(
  store: DocumentStore,
  when: (method: "create" | "delete", collection: string, id: string) => boolean,
  hook: () => Promise<void>,
): DocumentStore {
  let fired = false;
  const fire = async (method: "create" | "delete", collection: string, id: string) => {
    if (fired || !when(method, collection, id)) return;
    fired = true;
    await hook();
  };
  const racing: DocumentStore = {
    get: (collection, id) => store.get(collection, id),
    list: (collection, prefix) => store.list(collection, prefix),
    replace: (collection, id, expected, bytes) => store.replace(collection, id, expected, bytes),
    close: () => store.close(),
    create: async (collection, id, bytes) => {
      const result = await store.create(collection, id, bytes);
      await fire("create", collection, id);
      return result;
    },
    delete: async (collection, id) => {
      await fire("delete", collection, id);
      return store.delete(collection, id);
    },
  };
  return racing;
}

/** Every parent a tenant's lineage names is a crystal it lists and that can be read. */
async function assertLineageClosed(store: DocumentStore, tenant: string): Promise<void> {
  const lineage = JSON.parse(lineageJson(tenant, await readLineageSummaries(store, tenant))) as {
    crystals: { crystal_id: string; parent_crystal_id: string | null }[];
  };
  const listed = new Set(lineage.crystals.map((crystal) => crystal.crystal_id));
  for (const crystal of lineage.crystals) {
    assert.notEqual(await readCrystal(store, tenant, crystal.crystal_id), null);
    if (crystal.parent_crystal_id !== null) assert.ok(listed.has(crystal.parent_crystal_id));
  }
}

for (const [name, open] of STORES) {
  describe(`crystal expiry on ${name}`, () => {
    let opened: Opened;
    let store: DocumentStore;
    before(async () => {
      opened = await open();
      store = opened.store;
    });
    after(() => opened.dispose());

    test("old crystals go with their summaries and bytes; a younger descendant keeps its ancestors", async () => {
      const tenant = tenantHashOf(randomBytes(16));
      const root = prepared(tenant);
      const child = prepared(tenant, root.crystalId);
      const grandchild = prepared(tenant, child.crystalId);
      const lone = prepared(tenant);
      assert.equal(await storeCrystal(store, OWNER, root, null, daysAgo(40)), "created");
      assert.equal(await storeCrystal(store, OWNER, child, null, daysAgo(35)), "created");
      assert.equal(await storeCrystal(store, OWNER, grandchild, null, daysAgo(2)), "created");
      assert.equal(await storeCrystal(store, OWNER, lone, null, daysAgo(31)), "created");
      const loneBytes = lone.envelope.byteLength + lone.summary.byteLength;
      const before = await usage(store, `tenant/${tenant}`);

      const dry = await expireCrystals(store, { ttlDays: 30, now: NOW, dryRun: true });
      assert.deepEqual(dry, {
        expired: 1,
        freedBytes: loneBytes,
        keptForDescendants: 2,
        adopted: 0,
      });
      assert.notEqual(await readCrystal(store, tenant, lone.crystalId), null);

      assert.deepEqual(await expireCrystals(store, { ttlDays: 30, now: NOW }), dry);
      assert.equal(await readCrystal(store, tenant, lone.crystalId), null);
      assert.notEqual(await readCrystal(store, tenant, root.crystalId), null);
      assert.equal(await usage(store, `tenant/${tenant}`), before - loneBytes);
      assert.equal(await usage(store, `principal/${OWNER}`), before - loneBytes);
      const lineage = JSON.parse(lineageJson(tenant, await readLineageSummaries(store, tenant)));
      assert.equal(lineage.count, 3);
      assert.deepEqual(lineage.roots, [root.crystalId]);
      assert.deepEqual(lineage.heads, [grandchild.crystalId]);

      // Once the head is past the TTL too, the whole chain goes, and nothing of it is left.
      const later = await expireCrystals(store, {
        ttlDays: 30,
        now: new Date(NOW.getTime() + 40 * DAY_MS),
      });
      assert.deepEqual(later, {
        expired: 3,
        freedBytes: before - loneBytes,
        keptForDescendants: 0,
        adopted: 0,
      });
      assert.equal(
        JSON.parse(lineageJson(tenant, await readLineageSummaries(store, tenant))).count,
        0,
      );
      assert.equal(await usage(store, `tenant/${tenant}`), 0);
      assert.deepEqual(await store.list("crystals", `${tenant}/`), []);
      assert.deepEqual(
        (await store.list("tenants", STORED_PREFIX)).filter((id) => id.includes(tenant)),
        [],
      );
      // The tenant stays its owner's, and an expired crystal can be stored again.
      assert.notEqual(await store.get("tenants", tenant), null);
      assert.equal(await storeCrystal(store, OWNER, lone, null, NOW), "created");
    });

    test("a crystal stored before the index is adopted as of today; TTL 0 expires nothing", async () => {
      const tenant = tenantHashOf(randomBytes(16));
      const legacy = prepared(tenant);
      assert.equal(await storeCrystal(store, OWNER, legacy, null, daysAgo(400)), "created");
      for (const id of await store.list("tenants", STORED_PREFIX)) {
        if (id.includes(tenant)) assert.equal(await store.delete("tenants", id), true);
      }
      const never = await expireCrystals(store, { ttlDays: 0, now: NOW });
      assert.equal(never.expired, 0);
      assert.equal(never.adopted, 1);
      const adopted = await expireCrystals(store, { ttlDays: 30, now: NOW });
      assert.deepEqual([adopted.expired, adopted.adopted], [0, 0]);
      assert.notEqual(await readCrystal(store, tenant, legacy.crystalId), null);
      // Other tests' crystals share the store: this one is among those expired.
      const gone = await expireCrystals(store, { ttlDays: 30, now: daysAgo(-31) });
      assert.equal(gone.expired >= 1, true);
      assert.equal(await readCrystal(store, tenant, legacy.crystalId), null);
    });

    test("receiptd crystals expire acts on the configured store and reports in one JSON line", async () => {
      const tenant = tenantHashOf(randomBytes(16));
      const old = prepared(tenant);
      assert.equal(await storeCrystal(store, OWNER, old, null, daysAgo(400)), "created");
      const run = async (argv: string[]) => {
        let out = "";
        let err = "";
        const io = {
          stdin: async () => Buffer.alloc(0),
          stdout: (data: Uint8Array | string) => {
            out += String(data);
          },
          stderr: (text: string) => {
            err += text;
          },
        };
        const code = await crystalsCli(argv, io, { ...opened.env, CRYSTAL_TTL_DAYS: "30" });
        return { code, out, err };
      };
      const dry = await run(["expire", "--dry-run"]);
      assert.equal(dry.code, 0, dry.err);
      const dryReport = JSON.parse(dry.out);
      assert.equal(dryReport.dry_run, true);
      assert.equal(dryReport.ttl_days, 30);
      assert.equal(dryReport.expired >= 1, true);
      assert.notEqual(await readCrystal(store, tenant, old.crystalId), null);
      const real = await run(["expire"]);
      assert.equal(real.code, 0, real.err);
      assert.equal(JSON.parse(real.out).expired, dryReport.expired);
      assert.equal(await readCrystal(store, tenant, old.crystalId), null);
      const refused = await run(["expire", "--key-file", "k"]);
      assert.equal(refused.code, 2);
      assert.match(refused.err, /--key-file does not apply to 'expire'/);
    });

    test("a child written while the sweep takes its parent is withdrawn: parent_not_found", async () => {
      const tenant = tenantHashOf(randomBytes(16));
      const parent = prepared(tenant);
      const child = prepared(tenant, parent.crystalId);
      assert.equal(await storeCrystal(store, OWNER, parent, null, daysAgo(40)), "created");
      // The post has checked the parent and written the child's envelope, not yet its summary:
      // the sweep runs whole now, and cannot know of the child.
      const racing = interleaved(
        store,
        (method, _collection, id) =>
          method === "create" && id === crystalDocumentId(tenant, child.crystalId),
        async () => {
          await expireCrystals(store, { ttlDays: 30, now: NOW });
        },
      );
      assert.equal(await storeCrystal(racing, OWNER, child, null, NOW), "parent_not_found");
      assert.equal(await readCrystal(store, tenant, parent.crystalId), null);
      assert.equal(await readCrystal(store, tenant, child.crystalId), null);
      assert.equal(await store.get("crystals", lineageDocumentId(tenant, child.crystalId)), null);
      await assertLineageClosed(store, tenant);
    });

    test("a child stored while the sweep takes its parent keeps the parent", async () => {
      const tenant = tenantHashOf(randomBytes(16));
      const parent = prepared(tenant);
      const child = prepared(tenant, parent.crystalId);
      assert.equal(await storeCrystal(store, OWNER, parent, null, daysAgo(40)), "created");
      let posted: unknown = null;
      // The sweep listed the tenant's lineage (no child yet) and is about to take the parent's
      // summary: the whole post happens now, and finds its parent still there.
      const racing = interleaved(
        store,
        (method, _collection, id) =>
          method === "delete" && id === lineageDocumentId(tenant, parent.crystalId),
        async () => {
          posted = await storeCrystal(store, OWNER, child, null, NOW);
        },
      );
      await expireCrystals(racing, { ttlDays: 30, now: NOW });
      assert.equal(posted, "created");
      assert.notEqual(await readCrystal(store, tenant, parent.crystalId), null);
      assert.notEqual(
        await store.get("crystals", lineageDocumentId(tenant, parent.crystalId)),
        null,
      );
      assert.notEqual(await readCrystal(store, tenant, child.crystalId), null);
      await assertLineageClosed(store, tenant);
      const lineage = JSON.parse(lineageJson(tenant, await readLineageSummaries(store, tenant)));
      assert.deepEqual(lineage.roots, [parent.crystalId]);
      assert.deepEqual(lineage.heads, [child.crystalId]);
    });
  });
}
