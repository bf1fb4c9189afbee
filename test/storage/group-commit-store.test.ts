/**
 * The group-commit store (issue 33): documents of its logged collections are durable once
 * `create` resolves (in the log), readable at once, put in their own files by a checkpoint,
 * and replayed from the log at the next open when the process died before that.
 */
import assert from "node:assert/strict";
import { appendFile, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { GroupCommitStore } from "../../src/storage/group-commit-store.js";

const directories: string[] = [];
after(() => Promise.all(directories.map((d) => rm(d, { recursive: true, force: true }))));

async function dataDir(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "receiptd-group-commit-"));
  directories.push(directory);
  return directory;
}

const doc = (n: number) => Buffer.from(JSON.stringify({ n, note: "tab\tand\nnewline escaped" }));
const tx = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

/** A store whose checkpoints run only when asked (close, list), as after a kill -9. */
function open(dir: string, options: ConstructorParameters<typeof GroupCommitStore>[3] = {}) {
  const inner = new FsDocumentStore(dir, { minFreeBytes: 0 });
  const store = new GroupCommitStore(inner, join(dir, "journal", "log"), ["settlements"], {
    checkpointMs: 3_600_000,
    checkpointRecords: 1_000_000,
    ...options,
  });
  return { inner, store };
}

describe("GroupCommitStore", () => {
  test("concurrent creates are readable at once, keep the first, and reach their files on close", async () => {
    const dir = await dataDir();
    const { inner, store } = open(dir);
    await store.open();
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, n) => store.create("settlements", tx(n % 150), doc(n))),
    );
    assert.equal(results.filter((r) => r.created).length, 150);
    for (let n = 0; n < 150; n += 1) {
      assert.deepEqual(Buffer.from((await store.get("settlements", tx(n)))!), doc(n));
    }
    const again = await store.create("settlements", tx(3), doc(999));
    assert.deepEqual([again.created, Buffer.from(again.stored)], [false, doc(3)]);
    assert.equal(await inner.get("settlements", tx(3)), null, "not a file before a checkpoint");
    await store.close();
    assert.deepEqual(Buffer.from((await inner.get("settlements", tx(149)))!), doc(149));
    assert.equal((await inner.list("settlements")).length, 150);
    assert.deepEqual(await readdir(join(dir, "journal", "log")), [], "no segment left");
  });

  test("a process that dies before a checkpoint: the next open writes every logged document, a torn line is ignored", async () => {
    const dir = await dataDir();
    const first = open(dir);
    await first.store.open();
    await Promise.all(
      Array.from({ length: 50 }, (_, n) => first.store.create("settlements", tx(n), doc(n))),
    );
    // Not closed: as after SIGKILL. A batch whose write was cut short was never acknowledged.
    const [segment] = await readdir(join(dir, "journal", "log"));
    assert.ok(segment);
    await appendFile(join(dir, "journal", "log", segment), `settlements\t${tx(77)}\t{"torn`);
    const second = open(dir);
    await second.store.open();
    assert.deepEqual(await readdir(join(dir, "journal", "log")), []);
    for (let n = 0; n < 50; n += 1) {
      assert.deepEqual(Buffer.from((await second.inner.get("settlements", tx(n)))!), doc(n));
    }
    assert.equal(await second.store.get("settlements", tx(77)), null);
    const repeat = await second.store.create("settlements", tx(7), doc(1234));
    assert.deepEqual([repeat.created, Buffer.from(repeat.stored)], [false, doc(7)]);
    await second.store.close();
  });

  test("a checkpoint whose file-system sync fails fsyncs each file instead; other collections are not logged", async () => {
    const dir = await dataDir();
    let asked = 0;
    const { inner, store } = open(dir, {
      syncFileSystem: async () => {
        asked += 1;
        throw new Error("no syncfs here");
      },
    });
    await store.open();
    await store.create("settlements", tx(1), doc(1));
    await store.create("anchors", "sha256:ab", doc(2));
    assert.deepEqual(Buffer.from((await inner.get("anchors", "sha256:ab"))!), doc(2));
    assert.deepEqual(await store.list("settlements"), [tx(1)]);
    assert.equal(asked, 1);
    assert.deepEqual(await readdir(join(dir, "journal", "log")), []);
    assert.equal(
      JSON.parse(
        await readFile(join(dir, "store", "settlements", `0x${"0".repeat(63)}1.json`), "utf8"),
      ).n,
      1,
    );
    await store.close();
  });
});
