/**
 * The CPU pool: task bodies are moved to the worker, never copied; small tasks that wait
 * while the threads are busy travel to a thread together, and each still gets its own answer.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CpuPool } from "../../src/service/cpu-pool.js";
import { verifyTask } from "../../src/service/endpoints/verify/contract.js";
import { loadOrCreateServiceKey } from "../../src/service/service-key.js";
import type { WorkerContext } from "../../src/service/tasks/worker-context.js";
import type { VerifyTask } from "../../src/service/verification/outcome.js";
import { corpusBytes } from "../support/corpus.js";

describe("CpuPool", () => {
  let pool: CpuPool;
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-pool-"));
    await loadOrCreateServiceKey(dataDir);
    const context: WorkerContext = {
      dataDir,
      corpusDir: null,
      maxBatch: 50,
      maxResultBytes: 4 * 1024 * 1024,
      // A thread that cannot load sodium-native fails to start: every task here proves it did.
      ed25519: "libsodium",
    };
    pool = new CpuPool({ threads: 1, maxQueue: 32, workerData: context });
  });
  after(async () => {
    await pool.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test("a transferred body is detached on the sending side", async () => {
    const body = new Uint8Array(corpusBytes("vectors/01_happy_minimal.json")).buffer;
    const task: VerifyTask = { body, requireAnchor: false, receipt: false };
    const answer = await pool.run(verifyTask, task, [body]);
    assert.equal(body.byteLength, 0);
    assert.ok("json" in answer);
    assert.equal(answer.statusCode, 200);
    // The answer comes back as the worker wrote it: UTF-8 bytes, moved, in a buffer of its own.
    assert.ok(answer.json instanceof Uint8Array);
    assert.equal(answer.json.byteOffset, 0);
    assert.equal(answer.json.buffer.byteLength, answer.json.byteLength);
    assert.equal(JSON.parse(Buffer.from(answer.json).toString()).verdict, "TRUSTED");
  });

  test("tasks that wait for the busy thread go as one message, each with its own answer", async () => {
    const bodies = [
      corpusBytes("vectors/01_happy_minimal.json"),
      corpusBytes("vectors/03_tampered_body.json"),
      Buffer.from('{"bundles": [1, 2'),
      Buffer.from("[]"),
      corpusBytes("vectors/10b_anchor_missing.json"),
    ];
    const task = (i: number, requireAnchor = false): [VerifyTask, ArrayBuffer[]] => {
      const body = new Uint8Array(bodies[i % bodies.length]!).buffer;
      return [{ body, requireAnchor, receipt: false }, [body]];
    };
    const alone = [];
    for (let i = 0; i < 10; i++) alone.push(await pool.run(verifyTask, ...task(i, i === 9)));
    const before = pool.stats().batchedTasks;
    // The first goes at once to the idle thread; the other nine wait for it and go together.
    const together = await Promise.all(
      Array.from({ length: 10 }, (_, i) => pool.run(verifyTask, ...task(i, i === 9))),
    );
    assert.equal(pool.stats().batchedTasks - before, 9);
    assert.deepEqual(together, alone);
    const statuses = together.map((answer) => ("statusCode" in answer ? answer.statusCode : 0));
    assert.deepEqual(statuses.slice(0, 5), [200, 200, 400, 400, 200]);
  });

  test("beyond maxQueue waiting tasks, a task is refused as overloaded", async () => {
    const small = new CpuPool({
      threads: 1,
      maxQueue: 2,
      workerData: {
        dataDir,
        corpusDir: null,
        maxBatch: 50,
        maxResultBytes: 1 << 22,
        ed25519: "libsodium",
      } satisfies WorkerContext,
    });
    try {
      const runs = Array.from({ length: 4 }, () => {
        const body = new Uint8Array(corpusBytes("vectors/01_happy_minimal.json")).buffer;
        return small.run(verifyTask, { body, requireAnchor: false, receipt: false }, [body]);
      });
      const settled = await Promise.allSettled(runs);
      assert.deepEqual(
        settled.map((outcome) => outcome.status),
        ["fulfilled", "fulfilled", "fulfilled", "rejected"],
      );
      const refused = settled[3];
      assert.ok(refused?.status === "rejected");
      assert.equal((refused.reason as Error).name, "CpuPoolOverloadedError");
    } finally {
      await small.close();
    }
  });
});
