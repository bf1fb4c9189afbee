/**
 * Worker threads give memory back after a task that left a large heap behind.
 *
 * V8 runs a full collection of an isolate only when its old generation reaches a limit V8
 * sizes for itself, and that limit starts high. A legal 1 MiB body of `{}` receipts parses
 * into 350,000 `Map`s (70 MB), all alive until the parse ends, so they are promoted to the
 * old generation; under 16 such requests each worker thread grew to about 450 MB before V8
 * collected, and the service passed 900 MB (bench scenario `hostile-empty`). So after each
 * task the thread looks at its heap, and when more than `HEAP_RELEASE_BYTES` is in use it
 * runs a full collection there and then. What is left alive between tasks is small, so the
 * collection is quick (the parse tree it frees is never marked). The tasks of ordinary
 * traffic, up to 1 MiB batches of real bundles, leave well under the threshold (V8's own
 * collections keep them below 50 MB) and never pay for it.
 */
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Heap in use after a task above which the thread collects before it grows further. */
export const HEAP_RELEASE_BYTES = 64 * 1024 * 1024;

/** V8's `gc()`: without options, a full (mark-compact) collection, done before it returns. */
type CollectGarbage = () => void;

/**
 * `gc` without starting Node with `--expose-gc`, which worker threads cannot be given: the
 * flag is set just long enough to create a context that has it (the method Jest uses).
 */
function exposeGc(): CollectGarbage {
  setFlagsFromString("--expose-gc");
  try {
    return runInNewContext("gc") as CollectGarbage;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
}

let collect: CollectGarbage | undefined;

export function releaseHeapIfLarge(): void {
  if (getHeapStatistics().used_heap_size <= HEAP_RELEASE_BYTES) return;
  collect ??= exposeGc();
  collect();
}

/**
 * A Piscina task function that releases the heap after each task (also after a task that
 * throws or rejects).
 */
export function releasingHeap<Task, Result>(run: (task: Task) => Result): (task: Task) => Result {
  return (task) => {
    let result: Result;
    try {
      result = run(task);
    } catch (error) {
      releaseHeapIfLarge();
      throw error;
    }
    if (result instanceof Promise) {
      return result.finally(releaseHeapIfLarge) as Result;
    }
    releaseHeapIfLarge();
    return result;
  };
}
