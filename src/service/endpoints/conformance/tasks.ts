/** The worker task of `POST /conformance`: the route and `worker.ts` share this definition. */
import { defineTask } from "../../tasks/define-task.js";
import type { ConformanceAnswer, ConformanceTask } from "./answer.js";

export const conformanceTask = defineTask<ConformanceTask, Promise<ConformanceAnswer>>(
  "conformance",
);
