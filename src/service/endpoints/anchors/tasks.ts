/**
 * The worker tasks of the OpenTimestamps endpoints: `verify` answers `POST /verify-anchor`,
 * `store` checks a `POST /anchors` body before it is queued. Routes and `worker.ts` share
 * these definitions.
 */
import type { Answer } from "../../errors.js";
import { defineTask } from "../../tasks/define-task.js";
import type { AnchorStoreRequest, AnchorTask } from "./answer.js";

export const verifyAnchorTask = defineTask<AnchorTask, Answer>("anchors", "verify");

export const prepareAnchorTask = defineTask<AnchorTask, Answer | AnchorStoreRequest>(
  "anchors",
  "store",
);
