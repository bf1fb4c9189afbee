/** The durable log of the embedded in-memory stores: group commit, a cut last line, compaction. */
import assert from "node:assert/strict";
import { appendFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { type JournalRecord, StateJournal } from "../../src/storage/state-journal.js";

async function withDirectory(run: (directory: string) => Promise<void>): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), "receiptd-state-journal-"));
  try {
    await run(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** An owner whose state is the list of records it was given. */
async function openOwner(path: string, compactAfter?: number) {
  const state: JournalRecord[] = [];
  const journal = await StateJournal.open(
    path,
    (records) => state.push(...records),
    () => [...state],
    { compactAfter },
  );
  const add = async (record: JournalRecord) => {
    state.push(record);
    await journal.append(record);
  };
  return { state, journal, add };
}

describe("StateJournal", () => {
  test("appends survive a reopen; a line cut by a crash is dropped", () =>
    withDirectory(async (directory) => {
      const path = join(directory, "state", "owner.log");
      const first = await openOwner(path);
      await Promise.all([first.add(["a", 1]), first.add(["b", 2]), first.add(["c", 3])]);
      // No close: a kill -9 leaves the file as the syncs did, and here half a line more.
      await appendFile(path, '["d",');
      const second = await openOwner(path);
      assert.deepEqual(second.state, [
        ["a", 1],
        ["b", 2],
        ["c", 3],
      ]);
      await second.journal.close();
      await first.journal.close();
    }));

  test("the log is rewritten as the owner's snapshot after compactAfter lines", () =>
    withDirectory(async (directory) => {
      const path = join(directory, "owner.log");
      const owner = await openOwner(path, 3);
      for (const record of [
        ["x", 1],
        ["y", 2],
        ["z", 3],
        ["w", 4],
      ] as JournalRecord[]) {
        await owner.add(record);
      }
      await owner.journal.close();
      const lines = (await readFile(path, "utf8")).trim().split("\n");
      assert.deepEqual(lines, ['["x",1]', '["y",2]', '["z",3]', '["w",4]']);
    }));
});
