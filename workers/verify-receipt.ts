/**
 * Piscina task module for `POST /verify-receipt`. Thin on purpose: it hands the bytes to the
 * request handling in src/service, which calls the verifier library.
 */
import {
  answerVerifyReceiptRequest,
  type VerifyReceiptAnswer,
  type VerifyReceiptTask,
} from "../src/service/verify-receipt-request.js";
import { releasingHeap } from "../src/service/worker-heap.js";

export default releasingHeap(function verifyReceipt(task: VerifyReceiptTask): VerifyReceiptAnswer {
  return answerVerifyReceiptRequest(new Uint8Array(task.body));
});
