/**
 * `tasks/worker.ts` is worker-side: importing it on the main thread has no effect, and
 * reading its context there fails with a clear message instead of going on with null.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { workerContext, workerIdentity } from "../../../src/service/tasks/worker.js";

test("the worker context is refused on the main thread", () => {
  assert.throws(() => workerContext(), /worker-side: workerContext\(\) has no context/);
  assert.throws(() => workerIdentity(), /worker-side/);
});
