/** The worker task of `POST /mcp`: the route and `worker.ts` share this definition. */
import { defineTask } from "../../tasks/define-task.js";
import type { McpAnswer, McpTask } from "./answer.js";

export const mcpTask = defineTask<McpTask, McpAnswer>(import.meta.url);
