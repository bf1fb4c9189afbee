/**
 * Piscina task module for validating a stored revocation document (service.md §3): every
 * statement's Ed25519 self-signature is checked here, off the main thread.
 */
import {
  type RevocationDocumentTask,
  revocationDocumentProblems,
} from "../src/service/revocation-documents.js";
import { releasingHeap } from "../src/service/worker-heap.js";

export default releasingHeap(function validateRevocationDocument(
  task: RevocationDocumentTask,
): boolean {
  return revocationDocumentProblems(new Uint8Array(task.bytes), task.issuer).length === 0;
});
