/**
 * Crystal storage over both document stores (files, PostgreSQL): ownership races, crash
 * repair, and one crystal whatever its base64url spelling.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { keyPrincipal } from "../../src/access/principal.js";
import { type CrystalEnvelope, sealCrystal, tenantHashOf } from "../../src/crystals/client.js";
import {
  crystalDocumentId,
  type PreparedCrystal,
  readCrystal,
  readLineageSummaries,
  storeCrystal,
} from "../../src/crystals/store.js";
import { prepareCrystalPost } from "../../src/service/endpoints/crystals/answer.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { PgDocumentStore } from "../../src/storage/pg-document-store.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";
import { pythonUrlsafeB64encode } from "../support/python-base64.js";

const KEY = randomBytes(32);
const ALICE = keyPrincipal("a11ce000");
const BOB = keyPrincipal("b0b00000");

function seal(tenantHash: string, parentCrystalId: string | null = null, plaintextBytes = 64) {
  return sealCrystal({
    plaintext: randomBytes(plaintextBytes),
    key: KEY,
    tenantHash,
    parentCrystalId,
  });
}

function preparedFrom(envelope: CrystalEnvelope): PreparedCrystal {
  const answer = prepareCrystalPost(Buffer.from(JSON.stringify(envelope)), {
    maxCiphertextBytes: 1 << 21,
  });
  assert.equal(answer.kind, "store", JSON.stringify(answer));
  return answer as PreparedCrystal;
}

function prepared(tenantHash: string, parentCrystalId: string | null = null): PreparedCrystal {
  return preparedFrom(seal(tenantHash, parentCrystalId));
}

/** The envelope as the reference's Python clients send it: padded base64url. */
function padded(envelope: CrystalEnvelope): CrystalEnvelope {
  return {
    ...envelope,
    nonce: pythonUrlsafeB64encode(Buffer.from(envelope.nonce, "base64url")),
    ciphertext: pythonUrlsafeB64encode(Buffer.from(envelope.ciphertext, "base64url")),
  };
}

interface OpenedStore {
  store: DocumentStore;
  dispose(): Promise<void>;
}

const STORES: [string, () => Promise<OpenedStore>][] = [
  [
    "FsDocumentStore",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "receiptd-crystal-store-"));
      const store = new FsDocumentStore(dir);
      return {
        store,
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
      return {
        store,
        async dispose() {
          await store.close();
          await dropSchema(schema);
        },
      };
    },
  ],
];

for (const [name, open] of STORES) {
  describe(`storeCrystal on ${name}`, () => {
    let opened: OpenedStore;
    let store: DocumentStore;
    before(async () => {
      opened = await open();
      store = opened.store;
    });
    after(() => opened.dispose());

    test("two principals racing for a new tenant: exactly one owns it", async () => {
      for (let round = 0; round < 5; round += 1) {
        const tenant = tenantHashOf(`race ${round}`);
        const outcomes = await Promise.all([
          storeCrystal(store, ALICE, prepared(tenant)),
          storeCrystal(store, BOB, prepared(tenant)),
        ]);
        assert.deepEqual([...outcomes].sort(), ["created", "tenant_forbidden"]);
      }
    });

    test("the same crystal posted twice at once: one created, one unchanged", async () => {
      const crystal = prepared(tenantHashOf("twice"));
      const outcomes = await Promise.all([
        storeCrystal(store, ALICE, crystal),
        storeCrystal(store, ALICE, crystal),
      ]);
      assert.deepEqual([...outcomes].sort(), ["created", "unchanged"]);
    });

    test("an envelope stored without its summary (a crash) is listed after a re-post", async () => {
      const tenant = tenantHashOf("crash");
      const root = prepared(tenant);
      assert.equal(await storeCrystal(store, ALICE, root), "created");
      const child = prepared(tenant, root.crystalId);
      // What a crash between the two writes leaves: the envelope without its summary.
      await store.create("crystals", crystalDocumentId(tenant, child.crystalId), child.envelope);
      assert.equal((await readLineageSummaries(store, tenant)).length, 1);
      assert.equal(await storeCrystal(store, ALICE, child), "unchanged");
      assert.equal((await readLineageSummaries(store, tenant)).length, 2);
    });

    // 16-byte tag + 1, 2 or 3 bytes: two of the three lengths are padded in Python's spelling.
    for (const plaintextBytes of [1, 2, 3]) {
      for (const paddedFirst of [true, false]) {
        const order = paddedFirst ? "padded, then unpadded" : "unpadded, then padded";
        test(`a ciphertext of ${16 + plaintextBytes} bytes, ${order}: unchanged, the first is kept`, async () => {
          const tenant = tenantHashOf(`spelling ${randomBytes(8).toString("hex")}`);
          const envelope = seal(tenant, null, plaintextBytes);
          const [first, second] = paddedFirst
            ? [preparedFrom(padded(envelope)), preparedFrom(envelope)]
            : [preparedFrom(envelope), preparedFrom(padded(envelope))];
          assert.equal(first.crystalId, second.crystalId);
          assert.equal(await storeCrystal(store, ALICE, first), "created");
          assert.equal(await storeCrystal(store, ALICE, second), "unchanged");
          const stored = await readCrystal(store, tenant, envelope.crystal_id);
          assert.ok(stored !== null);
          assert.deepEqual(Buffer.from(stored), Buffer.from(first.envelope));
          assert.equal((await readLineageSummaries(store, tenant)).length, 1);
        });
      }
    }

    test("both spellings racing: one created, one unchanged, a padded or unpadded winner kept whole", async () => {
      for (let round = 0; round < 5; round += 1) {
        const tenant = tenantHashOf(
          `spelling race ${name} ${round} ${randomBytes(4).toString("hex")}`,
        );
        const envelope = seal(tenant, null, 1);
        const spellings = [preparedFrom(envelope), preparedFrom(padded(envelope))];
        const outcomes = await Promise.all(
          spellings.map((crystal) => storeCrystal(store, ALICE, crystal)),
        );
        assert.deepEqual([...outcomes].sort(), ["created", "unchanged"]);
        const winner = spellings[outcomes.indexOf("created")];
        const stored = await readCrystal(store, tenant, envelope.crystal_id);
        assert.ok(winner !== undefined && stored !== null);
        assert.deepEqual(Buffer.from(stored), Buffer.from(winner.envelope));
      }
    });

    test("another envelope for the id is still a conflict, in either spelling", async () => {
      const tenant = tenantHashOf(`conflict ${randomBytes(8).toString("hex")}`);
      const envelope = seal(tenant, null, 1);
      assert.equal(await storeCrystal(store, ALICE, preparedFrom(padded(envelope))), "created");
      const changed = { ...envelope, metadata_public: { changed: true } };
      for (const spelling of [changed, padded(changed)]) {
        assert.equal(await storeCrystal(store, ALICE, preparedFrom(spelling)), "crystal_conflict");
      }
    });
  });
}
