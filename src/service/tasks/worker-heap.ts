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
 * collection is quick (the parse tree it frees is never marked).
 *
 * Only what survived into the old generation counts: the young generation is emptied by V8's
 * own scavenges, cheaply and often, and counting it would make ordinary traffic pay for full
 * collections it does not need. The threshold was 64 MB of heap until issue 15: at 16 MB of
 * old generation, 16 concurrent 1 MiB batches of real bundles peak at about 225 MiB of RSS
 * instead of 310 (bench `large-bodies`), and single bundles, whose garbage dies young, still
 * almost never pay for a collection.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Old-generation bytes in use after a task above which the thread collects at once. */
export const HEAP_RELEASE_BYTES = 16 * 1024 * 1024;

/** The spaces V8's scavenges empty by themselves. */
const YOUNG_SPACES = new Set(["new_space", "new_large_object_space"]);

/** Bytes in use outside the young generation: what only a full collection gives back. */
export function oldGenerationBytes(): number {
  let total = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (!YOUNG_SPACES.has(space.space_name)) total += space.space_used_size;
  }
  return total;
}

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
  if (oldGenerationBytes() <= HEAP_RELEASE_BYTES) return;
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
