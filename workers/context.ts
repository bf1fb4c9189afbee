/**
 * Per-thread singletons shared by every task module of a worker thread: the context the pool
 * was started with, and this thread's view of the service signing key.
 */
import { workerData } from "node:worker_threads";
import { ServiceIdentity } from "../src/service/service-key.js";
import type { WorkerContext } from "../src/service/worker-context.js";

export const context = workerData as WorkerContext;

export const identity = ServiceIdentity.open(context.dataDir);
