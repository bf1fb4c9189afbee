/**
 * `releasingHeap` (src/service/tasks/worker-heap.ts): a task that leaves more than the threshold of
 * heap behind is followed by a full collection, so the next task starts from a small heap;
 * results, rejections and exceptions pass through unchanged.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  HEAP_RELEASE_BYTES,
  oldGenerationBytes,
  releasingHeap,
} from "../../../src/service/tasks/worker-heap.js";

/** A task that builds `count` maps (as a parse of `{}` × count does) and drops them. */
function parseLike(count: number): { count: number; heapInUse: number } {
  const maps = Array.from({ length: count }, () => new Map<string, unknown>());
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
