/** The worker task of `POST /verify`: the route and `worker.ts` share this definition. */

import { defineTask } from "../../tasks/define-task.js";
import type { VerifyOutcome, VerifyTask } from "../../verification/outcome.js";

export const verifyTask = defineTask<VerifyTask, VerifyOutcome>("verify", "default", {
  batchable: true,
});
