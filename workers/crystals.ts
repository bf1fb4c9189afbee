/**
 * Piscina task module for memory crystals (`POST /crystals`, `GET /crystals/lineage`). Thin on
 * purpose: the request handling lives in src/service/crystals-request.ts. Answers a
 * `CrystalPostAnswer` for a post and the lineage's JSON text for a lineage.
 */
import { move, transferableSymbol, valueSymbol } from "piscina";
import {
  answerLineage,
  type CrystalTask,
  prepareCrystalPost,
} from "../src/service/crystals-request.js";
import { releasingHeap } from "../src/service/worker-heap.js";

export default releasingHeap(function crystals(task: CrystalTask): unknown {
  if (task.kind === "lineage") return answerLineage(task);
  const answer = prepareCrystalPost(new Uint8Array(task.body), task);
  if (answer.kind === "reply") return answer;
  // The envelope can be megabytes: move its bytes back instead of copying them.
  return move({
    [transferableSymbol]: [answer.envelope.buffer, answer.summary.buffer],
    [valueSymbol]: answer,
  });
});
