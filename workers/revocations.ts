/**
 * Piscina task module for validating a stored revocation document (service.md §3): every
 * statement's Ed25519 self-signature is checked here, off the main thread.
 */
import {
  type RevocationDocumentTask,
  revocationDocumentProblems,
} from "../src/service/revocation-documents.js";

export default function validateRevocationDocument(task: RevocationDocumentTask): boolean {
  return revocationDocumentProblems(new Uint8Array(task.bytes), task.issuer).length === 0;
}
