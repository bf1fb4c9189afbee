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

  const run = (pool: CpuPool, principal: string, mode: "HOLD" | "TAG", label: string, cost = 1) => {
    const body = new Uint8Array(labelledBody(mode, label, BUNDLE)).buffer;
    return pool.run(verifyTask, { body, requireAnchor: false, receipt: false }, [body], {
      principal,
      cost,
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

  test("a flood's long tasks leave a thread to a principal that is about", {
    timeout: 60_000,
  }, async () => {
    const pool = poolOf(2);
    const tasks = heldTasks();
    try {
      const first = await run(pool, "key:honest", "TAG", "h0");
      assert.ok("statusCode" in first && first.statusCode === 200);
      // 1 MiB bodies weigh 64 (queueWeightOfBody): long. Sent at once, only one is on a thread.
      const flood = Array.from({ length: 4 }, (_, i) =>
        run(pool, "key:flood", "HOLD", `f${i}`, 64),
      );
      assert.equal(pool.stats().queueSize, 3);
      await tasks.startedCount(2);
      // The honest key's next task finds the other thread free while f0 is held.
      const honest = await run(pool, "key:honest", "TAG", "h1");
      assert.ok("statusCode" in honest && honest.statusCode === 200);
      await tasks.startedCount(3);
      // Starts are reported on their own channel, from two threads: only h1's place is certain.
      assert.deepEqual(tasks.started.slice(0, 2).sort(), ["f0", "h0"]);
      assert.equal(tasks.started[2], "h1");
      for (let i = 0; i < 4; i++) {
        await tasks.startedCount(i + 3);
        for (const label of tasks.started) tasks.release(label);
      }
      await Promise.all(flood);
      // One flood task at a time: each started only once the one before it was released.
      assert.deepEqual(tasks.started.slice(3), ["f1", "f2", "f3"]);
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

  test("a task whose deadline will pass before its expected time is over is never started", {
    timeout: 60_000,
  }, async () => {
    const deadlineMs = 4000;
    const pool = poolOf(1, deadlineMs);
    const tasks = heldTasks();
    try {
      // The thread is up before the clock matters: the gate's deadline is the late task's, nearly.
      const warm = await run(pool, "key:a", "TAG", "warm");
      assert.ok("statusCode" in warm && warm.statusCode === 200);
      const gate = run(pool, "key:a", "HOLD", "gate");
      await tasks.startedCount(2);
      // Expected to take the pool's most (1 s, whatever the mean per cost), it waits behind the
      // gate until less than that is left of its 4 s.
      const late = run(pool, "key:b", "HOLD", "late", 1_000_000).then(
        () => assert.fail("the late task was answered"),
        (error: unknown) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, deadlineMs - 800));
      tasks.release("gate");
      await gate;
      const refused = await late;
      assert.ok(refused instanceof WorkLimitExceededError);
      assert.equal(refused.ranMs, 0);
      // Its thread was never taken from it: the next task runs on it at once.
      const next = await run(pool, "key:b", "TAG", "next");
      assert.ok("statusCode" in next && next.statusCode === 200);
      await tasks.startedCount(3);
      assert.deepEqual(tasks.started, ["warm", "gate", "next"]);
    } finally {
      tasks.close();
      // Not close(): after a failed assertion, held tasks would never end.
      await pool.terminate();
    }
  });
});
