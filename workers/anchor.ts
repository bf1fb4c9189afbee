/**
 * Piscina task module for `POST /verify-anchor` and `POST /anchors`. Thin on purpose: the
 * request handling lives in src/service/anchor-request.ts.
 */
import {
  type AnchorReply,
  type AnchorStoreRequest,
  type AnchorTask,
  answerVerifyAnchorRequest,
  prepareAnchorPost,
} from "../src/service/anchor-request.js";
import { releasingHeap } from "../src/service/worker-heap.js";

export default releasingHeap(function anchor(task: AnchorTask): AnchorReply | AnchorStoreRequest {
  const bytes = new Uint8Array(task.body);
  return task.kind === "verify" ? answerVerifyAnchorRequest(bytes) : prepareAnchorPost(bytes);
});
