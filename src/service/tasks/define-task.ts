/**
 * Typed worker tasks. A task is declared once, with its input and output types, by
 * `defineTask<Input, Output>(import.meta.url, kind)` in the endpoint's `contract.ts`; the
 * route runs it with `cpuPool.run(task, input)` and the sibling `worker.ts` of that contract
 * implements it as the export named `kind`, with `implementTask(task, fn)`
 * (`tasks/worker.ts`). Both sides import the same definition, so the compiler checks that
 * they agree: there is no module URL in a route and no cast between a route and its worker.
 * The worker module is found from the contract's own URL, so no central list names the
 * endpoints that have tasks. test/service/tasks checks that every definition has its export.
 */

/**
 * Task modules are loaded by worker threads, which only run JavaScript. Under tsx (tests,
 * development) this file is TypeScript and so are the task modules; in dist both are `.js`.
 */
export const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");

export interface TaskDefinition<Input, Output> {
  /** The endpoint folder the task's contract is in (the key of `cpuPool.taskModules`). */
  readonly endpoint: string;
  /** File URL of the worker module: `worker.ts` (or `.js`) next to the contract. */
  readonly module: string;
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

/**
 * `contractUrl` is the defining module's `import.meta.url`: a `contract.ts` (or `.js` in
 * dist) directly in its endpoint folder.
 */
export function defineTask<Input, Output>(
  contractUrl: string,
  kind = "default",
  options: { batchable?: boolean } = {},
): TaskDefinition<Input, Output> {
  const match = /\/endpoints\/([^/]+)\/contract\.(ts|js)$/.exec(new URL(contractUrl).pathname);
  if (match === null) {
    throw new Error(`a task is defined in an endpoint folder's contract.ts, not in ${contractUrl}`);
  }
  const [, endpoint, extension] = match as unknown as [string, string, string];
  return {
    endpoint,
    module: new URL(`worker.${extension}`, contractUrl).href,
    kind,
    batchable: options.batchable ?? false,
  };
}
