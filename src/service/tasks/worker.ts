/**
 * The worker-thread side of the CPU pool, imported only by worker modules
 * (`src/service/endpoints/<name>/worker.ts`): the context the pool was started with, this
 * thread's view of the service signing key, and `implementTask`, which every worker module's
 * exports go through.
 */
import { isMainThread, workerData } from "node:worker_threads";
import { Piscina } from "piscina";
import { nodeCrypto } from "../../verifier/crypto/node.js";
import { platformCryptoProblem } from "../../verifier/crypto/platform.js";
import { setVerifierCrypto, verifierCrypto } from "../../verifier/crypto/provider.js";
import { ServiceIdentity } from "../service-key.js";
import type { TaskDefinition } from "./define-task.js";
import { isTaskBatch, runTaskBatch, type TaskBatch, type TaskBatchResults } from "./task-batch.js";
import type { WorkerContext } from "./worker-context.js";
import { releasingHeap } from "./worker-heap.js";

let context: WorkerContext | undefined;

/**
 * The context the pool started this thread with (`workerData`). Read on first use, not at
 * import: on the main thread there is none, and a module that imported this file there by
 * mistake would otherwise go on with null; this says so instead.
 */
export function workerContext(): WorkerContext {
  if (context !== undefined) return context;
  if (isMainThread || workerData === null || workerData === undefined) {
    throw new Error(
      "tasks/worker.ts is worker-side: workerContext() has no context outside a CPU pool thread",
    );
  }
  context = workerData as WorkerContext;
  // Each thread loads sodium-native for itself; the pool verifies with the main thread's
  // choice, so `/info`, the metrics and the startup line name what the threads use. A thread
  // that cannot load what the main thread loaded fails rather than answer otherwise.
  if (context.ed25519 === "openssl") setVerifierCrypto(nodeCrypto);
  else if (context.ed25519 === "libsodium" && verifierCrypto().id !== "libsodium") {
    throw new Error(`this worker thread cannot verify with libsodium: ${platformCryptoProblem}`);
  }
  return context;
}

let identity: ServiceIdentity | undefined;

/**
 * This thread's view of the service key, opened from `dataDir` on first use (tasks that sign
 * nothing never need a key), so a key rotation reaches the threads by itself.
 */
export function workerIdentity(): ServiceIdentity {
  identity ??= ServiceIdentity.open(workerContext().dataDir);
  return identity;
}

/**
 * A task module's export: `run`, checked against the definition's input and output types,
 * releasing the thread's heap after each message (`worker-heap.ts`); a `TaskBatch` is answered
 * item by item.
 *
 * `moved(output)` names the buffers of an output that go to the main thread without a copy
 * (transferred, as the request body came): each must be an `ArrayBuffer` of its own, never a
 * slice of Node's shared Buffer pool, which transferring would take from this thread.
 */
export function implementTask<Input, Output>(
  _task: TaskDefinition<Input, Output>,
  run: (input: Input) => Output,
  moved?: (output: Output) => ArrayBuffer[],
): (input: Input | TaskBatch<Input>) => Output | TaskBatchResults<Output> {
  // The crypto choice is made before the first task runs, not when the first task reads it.
  workerContext();
  // The pool sends batches only of tasks defined batchable (synchronous ones).
  return releasingHeap((input: Input | TaskBatch<Input>) => {
    if (isTaskBatch(input)) {
      const results = runTaskBatch(input, run);
      if (moved === undefined) return results;
      return movable(
        results,
        results.batchResults.flatMap((result) => ("value" in result ? moved(result.value) : [])),
      );
    }
    const output = run(input);
    return moved === undefined ? output : movable(output, moved(output));
  });
}

/**
 * `value`, marked for Piscina to transfer `buffers` with it rather than clone them
 * (`Piscina.move` of an object carrying its transfer list); the main thread receives `value`.
 */
function movable<Value>(value: Value, buffers: ArrayBuffer[]): Value {
  if (buffers.length === 0) return value;
  // Piscina's types name its own Transferable class; any object with the two symbols is one.
  const transferable = {
    [Piscina.transferableSymbol]: buffers,
    [Piscina.valueSymbol]: value,
  } as unknown as Parameters<typeof Piscina.move>[0];
  return Piscina.move(transferable) as unknown as Value;
}
