/**
 * Micro-batching of small tasks (issue 15). One message to a worker thread and back costs
 * about as much CPU, on both threads together, as a tenth of a single-bundle verification:
 * the structured clone, the wake-up of a sleeping thread and Piscina's bookkeeping. A task
 * defined with `{ batchable: true }` can therefore travel with others of its kind in one
 * message, `TaskBatch`, and come back as one `TaskBatchResults`: the pool (cpu-pool.ts) forms
 * batches only from tasks that wait while every thread is busy, so a lone request is never
 * held back, and the worker (`implementTask`) answers each item as if it had come alone.
 */

/** The message that carries several inputs of one task to a worker thread. */
export interface TaskBatch<Input> {
  readonly batchOf: readonly Input[];
}

/** Each item's own outcome: its output, or the error it threw, in the order of the batch. */
export type TaskBatchItemResult<Output> = { readonly value: Output } | { readonly error: unknown };

export interface TaskBatchResults<Output> {
  readonly batchResults: readonly TaskBatchItemResult<Output>[];
}

export function isTaskBatch<Input>(message: Input | TaskBatch<Input>): message is TaskBatch<Input> {
  return (
    typeof message === "object" &&
    message !== null &&
    Array.isArray((message as Partial<TaskBatch<Input>>).batchOf)
  );
}

/** Runs every item of `batch` with `run`; one item's failure is its own result, not the batch's. */
export function runTaskBatch<Input, Output>(
  batch: TaskBatch<Input>,
  run: (input: Input) => Output,
): TaskBatchResults<Output> {
  return {
    batchResults: batch.batchOf.map((input) => {
      try {
        return { value: run(input) };
      } catch (error) {
        return { error };
      }
    }),
  };
}
