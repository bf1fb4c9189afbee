/** The worker task of `POST /conformance`: the route and `worker.ts` share this definition. */
import type { Answer } from "../../errors.js";
import { defineTask } from "../../tasks/define-task.js";
import type { ConformanceTask } from "./answer.js";

export const conformanceTask = defineTask<ConformanceTask, Promise<Answer>>("conformance");
