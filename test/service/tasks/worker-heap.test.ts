/**
 * `releasingHeap` (src/service/tasks/worker-heap.ts): a task that leaves more than the threshold of
 * heap behind is followed by a full collection, so the next task starts from a small heap;
 * results, rejections and exceptions pass through unchanged.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  HEAP_RELEASE_BYTES,
  heapLimitAfter,
  LARGE_INPUT_BYTES,
  LARGE_TASK_RELEASE_BYTES,
  oldGenerationBytes,
  releasingHeap,
  taskInputBytes,
} from "../../../src/service/tasks/worker-heap.js";

/**
 * Short-lived garbage, enough for several scavenges whatever the young generation's size: a
 * scavenge promotes what survived the one before, so what the task still holds ends up in the
 * old generation, as a long parse's tree does. (Without it, how much of the maps V8 promotes
 * depends on its young generation: Node 24's kept most of 200,000 maps young.)
 */
function churn(): number {
  let kept = 0;
  for (let round = 0; round < 4_000; round++) {
    const garbage = Array.from({ length: 1_000 }, (_, i) => ({ i }));
    kept += garbage.length;
  }
  return kept;
}

/** A task that builds `count` maps (as a parse of `{}` × count does) and drops them. */
function parseLike(count: number): { count: number; heapInUse: number } {
  const maps = Array.from({ length: count }, () => new Map<string, unknown>());
  churn();
  return { count: maps.length, heapInUse: oldGenerationBytes() };
}

describe("releasingHeap", () => {
  test("a task that leaves a large heap is followed by a collection", () => {
    const task = releasingHeap(parseLike);
    // 600,000 maps hold about 115 MB while the task runs, most of it promoted to the old
    // generation before the task ends.
    const { count, heapInUse } = task(600_000);
    assert.equal(count, 600_000);
    assert.ok(heapInUse > HEAP_RELEASE_BYTES, `${heapInUse} old-generation bytes in the task`);
    const after = oldGenerationBytes();
    assert.ok(after < heapInUse / 3, `${after} old-generation bytes in use after the task`);
  });

  test("after a task with a large body, a smaller heap is already too much", () => {
    assert.equal(heapLimitAfter(0), HEAP_RELEASE_BYTES);
    assert.equal(heapLimitAfter(LARGE_INPUT_BYTES - 1), HEAP_RELEASE_BYTES);
    assert.equal(heapLimitAfter(LARGE_INPUT_BYTES), LARGE_TASK_RELEASE_BYTES);
    assert.ok(LARGE_TASK_RELEASE_BYTES < HEAP_RELEASE_BYTES);
    assert.equal(taskInputBytes({ body: new ArrayBuffer(300_000), receipt: false }), 300_000);
    assert.equal(taskInputBytes({ body: new Uint8Array(12) }), 12);
    assert.equal(taskInputBytes({ batchOf: [{ body: new ArrayBuffer(10) }] }), 0);
    assert.equal(taskInputBytes(42), 0);
    assert.equal(taskInputBytes(null), 0);

    // 200,000 maps (about 40 MB, under the general threshold) left by a task whose body was
    // large are collected at once.
    const task = releasingHeap((input: { body: ArrayBuffer; count: number }) =>
      parseLike(input.count),
    );
    const { heapInUse } = task({ body: new ArrayBuffer(LARGE_INPUT_BYTES), count: 200_000 });
    assert.ok(
      heapInUse > LARGE_TASK_RELEASE_BYTES,
      `${heapInUse} old-generation bytes in the task`,
    );
    const after = oldGenerationBytes();
    assert.ok(after < heapInUse / 2, `${after} old-generation bytes in use after the task`);
  });

  test("the task's result, rejection or exception is what the caller gets", async () => {
    assert.equal(releasingHeap((n: number) => n + 1)(1), 2);
    assert.equal(await releasingHeap(async (n: number) => n * 2)(21), 42);
    await assert.rejects(
      releasingHeap(async () => {
        throw new RangeError("rejected");
      })(undefined),
      RangeError,
    );
    assert.throws(
      () =>
        releasingHeap(() => {
          throw new TypeError("thrown");
        })(undefined),
      TypeError,
    );
  });
});
