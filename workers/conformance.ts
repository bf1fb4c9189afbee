/**
 * Piscina task module for `POST /conformance`. Thin on purpose: the corpus manifests are
 * loaded once per thread, on first use, and the request handling lives in src/service.
 */
import { corpusLoader } from "../src/conformance/corpus.js";
import {
  answerConformanceRequest,
  type ConformanceAnswer,
  type ConformanceTask,
} from "../src/service/conformance-request.js";
import { releasingHeap } from "../src/service/worker-heap.js";
import { context, identity } from "./context.js";

const requestContext = {
  corpus: corpusLoader(context.corpusDir),
  signer: () => identity.signer(),
};

export default releasingHeap(function conformance(
  task: ConformanceTask,
): Promise<ConformanceAnswer> {
  return answerConformanceRequest(new Uint8Array(task.body), requestContext);
});
