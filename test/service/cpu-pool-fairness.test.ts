/**
 * The fair CPU pool on real threads (issue 32). A task module reports when each task starts and
 * holds some until the test releases them (fixtures/held-verify-worker.ts), so the assertions
 * are about order: which principal's task a freed thread takes, never how long anything took.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CpuPool, WorkLimitExceededError } from "../../src/service/cpu-pool.js";
import { verifyTask } from "../../src/service/endpoints/verify/contract.js";
import { loadOrCreateServiceKey } from "../../src/service/service-key.js";
import type { WorkerContext } from "../../src/service/tasks/worker-context.js";
import { corpusBytes } from "../support/corpus.js";
import { labelledBody } from "./fixtures/held-signal.js";
import { heldTasks } from "./fixtures/held-tasks.js";
import { fixtureTaskModule } from "./support/service.js";

const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");

describe("the fair CPU pool", () => {
  let dataDir: string;
  let context: WorkerContext;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-fair-pool-"));
    await loadOrCreateServiceKey(dataDir);
    context = {
      dataDir,
      corpusDir: null,
      maxBatch: 50,
      maxResultBytes: 4 * 1024 * 1024,
      ed25519: "libsodium",
    };
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  const poolOf = (threads: number, deadlineMs = 60_000) =>
    new CpuPool({
      threads,
      maxQueue: 64,
      deadlineMs,
      taskModules: { verify: fixtureTaskModule("held-verify-worker") },
      workerData: context,
    });

  const run = (pool: CpuPool, principal: string, mode: "HOLD" | "TAG", label: string) => {
    const body = new Uint8Array(labelledBody(mode, label, BUNDLE)).buffer;
    return pool.run(verifyTask, { body, requireAnchor: false, receipt: false }, [body], {
      principal,
    });
  };

  test("another principal's task takes the first thread to free, ahead of a flood's queue", {
    timeout: 60_000,
  }, async () => {
    const pool = poolOf(2);
    const tasks = heldTasks();
    try {
      const flood = Array.from({ length: 8 }, (_, i) => run(pool, "key:flood", "HOLD", `f${i}`));
      await tasks.startedCount(2);
      assert.equal(pool.stats().queueSize, 6);
      const honest = run(pool, "key:honest", "TAG", "honest");
      assert.equal(pool.stats().principalsWaiting, 2);
      tasks.release(tasks.started[0]!);
      const answer = await honest;
      assert.ok("statusCode" in answer && answer.statusCode === 200);
      // Its start is reported on another channel than its answer: it may come after it.
      await tasks.startedCount(3);
      // Two flood tasks held the threads when the honest one came; it waited for one of them.
      assert.deepEqual(tasks.started.slice(0, 3).sort(), ["f0", "f1", "honest"]);
      assert.equal(tasks.started[2], "honest");
      for (let i = 2; i < 8; i++) {
        await tasks.startedCount(i + 2);
        for (const label of tasks.started) tasks.release(label);
      }
      for (const label of tasks.started) tasks.release(label);
      await Promise.all(flood);
      // Two threads report starts on their own: only the set is certain.
      assert.deepEqual(tasks.started.filter((label) => label !== "honest").sort(), [
        "f0",
        "f1",
        "f2",
        "f3",
        "f4",
        "f5",
        "f6",
        "f7",
      ]);
    } finally {
      tasks.close();
      // Not close(): after a failed assertion, held tasks would never end.
      await pool.terminate();
    }
  });

  test("a task cut at the deadline is charged: its principal's next task waits for the others", {
    timeout: 60_000,
  }, async () => {
    const deadlineMs = 4000;
    const pool = poolOf(1, deadlineMs);
    const tasks = heldTasks();
    try {
      const cut = await run(pool, "key:flood", "HOLD", "cut").then(
        () => assert.fail("the held task ran past its deadline"),
        (error: unknown) => error,
      );
      assert.ok(cut instanceof WorkLimitExceededError);
      assert.equal(cut.limit, deadlineMs);
      // It started at once: all the time it was given, it held a thread.
      assert.ok(cut.ranMs > 0);
      // The cut thread was replaced: let the new one start before deadlines count again.
      const warm = new Uint8Array(BUNDLE).buffer;
      await pool.run(verifyTask, { body: warm, requireAnchor: false, receipt: false }, [warm]);
      // The thread is held again, and both principals queue behind it, the flooder first.
      const gate = run(pool, "key:honest", "HOLD", "gate");
      await tasks.startedCount(2);
      const rest = [
        run(pool, "key:flood", "TAG", "f0"),
        run(pool, "key:flood", "TAG", "f1"),
        run(pool, "key:honest", "TAG", "h0"),
        run(pool, "key:honest", "TAG", "h1"),
      ];
      tasks.release("gate");
      await Promise.all([gate, ...rest]);
      // First in, but its principal owes the 4 s its cut task held the thread.
      assert.deepEqual(tasks.started, ["cut", "gate", "h0", "h1", "f0", "f1"]);
    } finally {
      tasks.close();
      // Not close(): after a failed assertion, held tasks would never end.
      await pool.terminate();
    }
  });
});
