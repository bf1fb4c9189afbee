/** The CPU pool: task bodies are moved to the worker, never copied. */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CpuPool } from "../../src/service/cpu-pool.js";
import type { VerifyTask } from "../../src/service/endpoints/verify/answer.js";
import { verifyTask } from "../../src/service/endpoints/verify/tasks.js";
import { loadOrCreateServiceKey } from "../../src/service/service-key.js";
import type { WorkerContext } from "../../src/service/tasks/worker-context.js";
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
    };
    pool = new CpuPool({ threads: 1, maxQueue: 4, workerData: context });
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
    assert.equal(JSON.parse(answer.json).verdict, "TRUSTED");
  });
});
