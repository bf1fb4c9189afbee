/** The CPU pool: task bodies are moved to the worker, never copied. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CpuPool, taskModuleUrl } from "../../src/service/cpu-pool.js";
import type {
  VerifyAnswer,
  VerifyTask,
  VerifyWorkerContext,
} from "../../src/service/verify-request.js";
import { generateSigner } from "../../src/verifier/crypto/ed25519.js";
import { corpusBytes } from "../support/corpus.js";

describe("CpuPool", () => {
  let pool: CpuPool;
  before(() => {
    const context: VerifyWorkerContext = { maxBatch: 50, receiptSigner: generateSigner() };
    pool = new CpuPool({ threads: 1, maxQueue: 4, workerData: context });
  });
  after(() => pool.close());

  test("a transferred body is detached on the sending side", async () => {
    const body = new Uint8Array(corpusBytes("vectors/01_happy_minimal.json")).buffer;
    const task: VerifyTask = { body, requireAnchor: false, receipt: false };
    const answer = await pool.run<VerifyAnswer>(taskModuleUrl("verify"), task, [body]);
    assert.equal(body.byteLength, 0);
    assert.equal(answer.statusCode, 200);
    assert.equal(JSON.parse(answer.json).verdict, "TRUSTED");
  });
});
