/** Worker-thread side of memory crystals: envelope checks, JCS form and lineage. */
import { move, transferableSymbol, valueSymbol } from "piscina";
import { implementTask } from "../../tasks/worker.js";
import { answerLineage, type CrystalPostAnswer, prepareCrystalPost } from "./answer.js";
import { lineageTask, prepareCrystalTask } from "./contract.js";

export const post = implementTask(prepareCrystalTask, (task): CrystalPostAnswer => {
  const answer = prepareCrystalPost(new Uint8Array(task.body), task);
  if (answer.kind === "reply") return answer;
  // The envelope can be megabytes: move its bytes back instead of copying them. Piscina
  // unwraps the marker, so the main thread receives the answer itself.
  return move({
    [transferableSymbol]: [answer.envelope.buffer, answer.summary.buffer],
    [valueSymbol]: answer,
  }) as unknown as CrystalPostAnswer;
});

export const lineage = implementTask(lineageTask, answerLineage);
