/**
 * The contract of `GET /revocations/{issuer}` (service.md §3), and the worker task that checks
 * a stored revocation document before it is served.
 */

import type { RevocationDocumentCheck } from "../../../revocations/documents.js";
import type { CpuPool, RunOptions } from "../../cpu-pool.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { revocationDocumentSchema } from "../../schemas/revocation-document.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";

/** The task the `revocations` worker runs: validate a stored document on a worker. */
export interface RevocationDocumentTask {
  /** The stored bytes, copied into a buffer of their own and moved to the worker. */
  bytes: ArrayBuffer;
  issuer: string;
}

/** True when the document is one the service can vouch for. */
export const checkRevocationDocumentTask = defineTask<RevocationDocumentTask, boolean>(
  import.meta.url,
);

/**
 * Validation on the CPU pool (`worker.ts`), keeping Ed25519 off the main thread; MCP's
 * `get_revocations` uses it too. `options` name the request's principal, whose turn the
 * check takes.
 */
export function revocationDocumentCheckOn(
  pool: CpuPool,
  options: RunOptions = {},
): RevocationDocumentCheck {
  return (bytes, issuer) => {
    const copy = new Uint8Array(bytes).buffer;
    const task: RevocationDocumentTask = { bytes: copy, issuer };
    return pool.run(checkRevocationDocumentTask, task, [copy], options);
  };
}

const revocationsSchema = {
  description:
    "The issuer's revocation document (verifier.md §7): self-signed statements revoking the issuer's key, " +
    "each validated before it is served. Conditional requests with `If-None-Match` are answered 304.",
  params: {
    type: "object",
    required: ["issuer"],
    properties: {
      issuer: { type: "string", description: "the issuer's did:key (`:` may be percent-encoded)" },
    },
  },
  response: {
    200: revocationDocumentSchema,
    304: { description: "the client's copy (named by `If-None-Match`) is current", type: "null" },
    404: {
      ...errorResponseSchema,
      description:
        "`no_document`: the issuer has no document, whatever its form (only an Ed25519 " +
        "did:key can have one)",
    },
    ...commonErrorResponses,
  },
} as const;

export const getRevocationsOperation = defineOperation({
  method: "GET",
  url: "/revocations/:issuer",
  operationId: "getRevocations",
  summary: "Read an issuer's revocation document",
  tag: "revocations",
  access: "keyless",
  refusals: ["no_document"],
  schema: revocationsSchema,
});
