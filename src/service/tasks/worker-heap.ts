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
 * own scavenges, cheaply and often. And a forced collection is not free for the tasks after
 * it (V8 shrinks its young generation, and the next tasks run slower): at a 16 MB threshold
 * for every task, 50-bundle batches lost 10–18% of their throughput (bench, issue 15). So:
 * - after a task whose input was at least `LARGE_INPUT_BYTES`, the thread collects once more
 *   than `LARGE_TASK_RELEASE_BYTES` is in the old generation: 16 concurrent 1 MiB batches of
 *   real bundles then peak at about 205 MB of RSS instead of 275 (bench `large-bodies`), for
 *   about a fifth of their throughput;
 * - after any other task, only past `HEAP_RELEASE_BYTES`, as before issue 15.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Old-generation bytes in use after any task above which the thread collects at once. */
export const HEAP_RELEASE_BYTES = 64 * 1024 * 1024;
/** A task input of this size or more (a request body near the 1 MiB limit) is a large one… */
export const LARGE_INPUT_BYTES = 256 * 1024;
/** …after which the thread collects past this many old-generation bytes. */
export const LARGE_TASK_RELEASE_BYTES = 16 * 1024 * 1024;

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

/** The old-generation bytes a task with `inputBytes` of input may leave behind. */
export function heapLimitAfter(inputBytes: number): number {
  return inputBytes >= LARGE_INPUT_BYTES ? LARGE_TASK_RELEASE_BYTES : HEAP_RELEASE_BYTES;
}

/** Collects when the old generation holds more than a task of `inputBytes` may leave. */
export function releaseHeapIfLarge(inputBytes: number): void {
  if (oldGenerationBytes() <= heapLimitAfter(inputBytes)) return;
  collect ??= exposeGc();
  collect();
}

/** The bytes a task carries: its transferred `body` (the request), if it has one. */
export function taskInputBytes(task: unknown): number {
  if (typeof task !== "object" || task === null || !("body" in task)) return 0;
  const { body } = task;
  return body instanceof ArrayBuffer || ArrayBuffer.isView(body) ? body.byteLength : 0;
}

/**
 * A Piscina task function that releases the heap after each task (also after a task that
 * throws or rejects). `inputBytes` tells large tasks from the others.
 */
export function releasingHeap<Task, Result>(
  run: (task: Task) => Result,
  inputBytes: (task: Task) => number = taskInputBytes,
): (task: Task) => Result {
  return (task) => {
    const bytes = inputBytes(task);
    const release = () => releaseHeapIfLarge(bytes);
    let result: Result;
    try {
      result = run(task);
    } catch (error) {
      release();
      throw error;
    }
    if (result instanceof Promise) {
      return result.finally(release) as Result;
    }
    release();
    return result;
  };
}
