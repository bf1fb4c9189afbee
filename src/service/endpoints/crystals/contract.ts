/**
 * The worker tasks of memory crystals: `post` checks and prepares a `POST /crystals` body,
 * `lineage` builds `GET /crystals/lineage`'s answer from the stored summaries. The route and
 * `worker.ts` share these definitions.
 */
import { defineTask } from "../../tasks/define-task.js";
import type { CrystalLineageTask, CrystalPostAnswer, CrystalPostTask } from "./answer.js";

export const prepareCrystalTask = defineTask<CrystalPostTask, CrystalPostAnswer>(import.meta.url, "post",
);

/** Answers the lineage's JSON text. */
export const lineageTask = defineTask<CrystalLineageTask, string>(import.meta.url, "lineage");
