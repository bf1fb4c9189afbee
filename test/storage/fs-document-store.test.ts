/** The embedded document store: the shared contract, plus what only files can get wrong. */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { documentStoreContract } from "./document-store-contract.js";

async function freshStore() {
  const dataDir = await mkdtemp(join(tmpdir(), "receiptd-store-"));
  const store = new FsDocumentStore(dataDir);
  return {
    dataDir,
    store,
    async dispose() {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

documentStoreContract("FsDocumentStore", freshStore);

describe("FsDocumentStore on disk", () => {
  test("documents are files readable by the owner only, with no temporary files left", async () => {
    const fixture = await freshStore();
    try {
      await fixture.store.create("anchors", "sha256:ab", new TextEncoder().encode("{}"));
      await fixture.store.replace(
        "anchors",
        "sha256:ab",
        new TextEncoder().encode("{}"),
        new TextEncoder().encode('{"v":2}'),
      );
      const directory = join(fixture.dataDir, "store", "anchors");
      const names = await readdir(directory);
      assert.deepEqual(names, ["sha256%3Aab.json"]);
      assert.equal((await stat(join(directory, names[0] ?? ""))).mode & 0o777, 0o600);
    } finally {
      await fixture.dispose();
    }
  });

  test("a temporary file left by a crash is not a document", async () => {
    const fixture = await freshStore();
    try {
      await fixture.store.create("anchors", "sha256:cd", new TextEncoder().encode("{}"));
      const directory = join(fixture.dataDir, "store", "anchors");
      await writeFile(join(directory, "sha256%3Aef.json.0123456789ab.tmp"), '{"half');
      assert.deepEqual(await fixture.store.list("anchors"), ["sha256:cd"]);
      assert.equal(await fixture.store.get("anchors", "sha256:ef"), null);
    } finally {
      await fixture.dispose();
    }
  });

  test("ids that are empty or too long once encoded are refused", async () => {
    const fixture = await freshStore();
    try {
      await assert.rejects(fixture.store.get("anchors", ""), RangeError);
      await assert.rejects(fixture.store.get("anchors", "x".repeat(251)), RangeError);
      await assert.rejects(fixture.store.get("anchors", "é".repeat(42)), RangeError);
    } finally {
      await fixture.dispose();
    }
  });
});
