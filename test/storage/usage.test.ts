/**
 * Quota usage documents (src/storage/usage.ts) in both modes: the file store and PostgreSQL
 * (a private schema, dropped afterwards).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { PgDocumentStore } from "../../src/storage/pg-document-store.js";
import { addUsage, chargeUsage, readUsage } from "../../src/storage/usage.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";

const stores: [string, () => Promise<{ store: DocumentStore; dispose(): Promise<void> }>][] = [
  [
    "FsDocumentStore",
    async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "receiptd-usage-"));
      const store = new FsDocumentStore(dataDir);
      return { store, dispose: () => rm(dataDir, { recursive: true, force: true }) };
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

for (const [name, open] of stores) {
  describe(`quota usage on ${name}`, () => {
    test("charges up to the quota and no further, and reports what is held", async () => {
      const { store, dispose } = await open();
      try {
        const principal = "key:0123456789abcdef";
        assert.equal(await chargeUsage(store, "anchors", "principal", principal, 600, 1000), null);
        assert.equal(await chargeUsage(store, "anchors", "principal", principal, 400, 1000), null);
        assert.equal(await chargeUsage(store, "anchors", "principal", principal, 1, 1000), 1000);
        assert.equal(await readUsage(store, "anchors", "principal", principal), 1000);
        // Collections and kinds are separate counters.
        assert.equal(await readUsage(store, "tenants", "principal", principal), 0);
        await addUsage(store, "anchors", "principal", principal, -5000);
        assert.equal(await readUsage(store, "anchors", "principal", principal), 0);
      } finally {
        await dispose();
      }
    });

    test("concurrent charges add up and never pass the quota together", async () => {
      const { store, dispose } = await open();
      try {
        const principal = "x402:0x00000000000000000000000000000000000000aa";
        const charges = await Promise.all(
          Array.from({ length: 12 }, () =>
            chargeUsage(store, "anchors", "principal", principal, 100, 1000),
          ),
        );
        assert.equal(charges.filter((held) => held === null).length, 10);
        assert.equal(await readUsage(store, "anchors", "principal", principal), 1000);
      } finally {
        await dispose();
      }
    });

    test("64 charges of one key at once all land: one process's writers take turns", async () => {
      // The fleet bench's 16 concurrent anchors of one key lost the compare-and-set race 20
      // times and answered 500; now they queue per document within the process.
      const { store, dispose } = await open();
      try {
        const principal = "key:fedcba9876543210";
        const charges = await Promise.all(
          Array.from({ length: 64 }, () =>
            chargeUsage(store, "anchors", "principal", principal, 10, 1_000_000),
          ),
        );
        assert.deepEqual(new Set(charges), new Set([null]));
        assert.equal(await readUsage(store, "anchors", "principal", principal), 640);
      } finally {
        await dispose();
      }
    });
  });
}
