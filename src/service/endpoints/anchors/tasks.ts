/**
 * The worker tasks of the OpenTimestamps endpoints: `verify` answers `POST /verify-anchor`,
 * `store` checks a `POST /anchors` body before it is queued. Routes and `worker.ts` share
 * these definitions.
 */
import { defineTask } from "../../tasks/define-task.js";
import type { AnchorReply, AnchorStoreRequest, AnchorTask } from "./answer.js";

export const verifyAnchorTask = defineTask<AnchorTask, AnchorReply>("anchors", "verify");

export const prepareAnchorTask = defineTask<AnchorTask, AnchorReply | AnchorStoreRequest>(
  "anchors",
  "store",
);
