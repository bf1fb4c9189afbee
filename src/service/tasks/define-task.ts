/**
 * Typed worker tasks. A task is declared once, with its input and output types, by
 * `defineTask<Input, Output>(endpoint, kind)` in the endpoint's `tasks.ts`; the route runs it
 * with `cpuPool.run(task, input)` and the endpoint's `worker.ts` implements it as the export
 * named `kind`, with `implementTask(task, fn)` (`tasks/worker.ts`). Both sides import the same
 * definition, so the compiler checks that they agree: there is no module URL in a route and
 * no cast between a route and its worker. test/service/tasks checks that every definition
 * has its export.
 */

/**
 * Task modules are loaded by worker threads, which only run JavaScript. Under tsx (tests,
 * development) this file is TypeScript and so are the task modules; in dist both are `.js`.
 */
export const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");

/** The endpoints with work for the CPU pool: folders of `src/service/endpoints/`. */
export type TaskEndpoint =
  | "verify"
  | "verify-receipt"
  | "anchors"
  | "settlements"
  | "revocations"
  | "erc8004"
  | "crystals"
  | "conformance"
  | "mcp";

export interface TaskDefinition<Input, Output> {
  readonly endpoint: TaskEndpoint;
  /** The export of the endpoint's `worker.ts` that runs the task. */
  readonly kind: string;
  /**
   * Small inputs may share one message to a worker (`task-batch.ts`): only for synchronous
   * tasks whose items are independent of each other.
   */
  readonly batchable: boolean;
  /** Never set: carries the input and output types from the definition to its users. */
  readonly types?: { input: Input; output: Output };
}

export function defineTask<Input, Output>(
  endpoint: TaskEndpoint,
  kind = "default",
  options: { batchable?: boolean } = {},
): TaskDefinition<Input, Output> {
  return { endpoint, kind, batchable: options.batchable ?? false };
}

/** File URL of the worker module of `endpoint`, in the running code's language. */
export function workerModuleUrl(endpoint: TaskEndpoint): string {
  const extension = RUNNING_FROM_SOURCE ? "ts" : "js";
  return new URL(`../endpoints/${endpoint}/worker.${extension}`, import.meta.url).href;
}
