/** The worker task that checks a stored revocation document before it is served. */
import type { RevocationDocumentCheck } from "../../../revocations/documents.js";
import type { CpuPool } from "../../cpu-pool.js";
import { defineTask } from "../../tasks/define-task.js";

/** The task the `revocations` task module runs: validate a stored document on a worker. */
export interface RevocationDocumentTask {
  /** The stored bytes, copied into a buffer of their own and moved to the worker. */
  bytes: ArrayBuffer;
  issuer: string;
}

/** True when the document is one the service can vouch for. */
export const checkRevocationDocumentTask = defineTask<RevocationDocumentTask, boolean>(
  "revocations",
);

/** Validation on the CPU pool (`worker.ts`), keeping Ed25519 off the main thread. */
export function revocationDocumentCheckOn(pool: CpuPool): RevocationDocumentCheck {
  return (bytes, issuer) => {
    const copy = new Uint8Array(bytes).buffer;
    const task: RevocationDocumentTask = { bytes: copy, issuer };
    return pool.run(checkRevocationDocumentTask, task, [copy]);
  };
}
