/** The worker task of `POST /erc8004/validate`: the route and `worker.ts` share this definition. */
import type { Answer } from "../../errors.js";
import { defineTask } from "../../tasks/define-task.js";
import type { Erc8004Task } from "./answer.js";

export const validateTask = defineTask<Erc8004Task, Promise<Answer>>("erc8004");
