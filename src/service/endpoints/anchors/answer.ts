/**
 * Worker-side handling of `POST /anchors` (service.md §2): strict parsing, request checks and
 * the proof check run on a CPU-pool thread (`worker.ts`); the main thread only forwards
 * answers and submits store jobs. `POST /verify-anchor`'s check is shared with MCP's
 * `verify_anchor`, in `verification/anchor-answer.ts`.
 */
import { createHash } from "node:crypto";
import {
  type AnchorJob,
  anchorId,
  anchorJobId,
  jobAttestation,
} from "../../../../queues/anchors.js";
import { bodyValidator } from "../../../validation/body-validator.js";
import { verifyProof } from "../../../verifier/anchor/index.js";
import { isObject, type JsonValue } from "../../../verifier/json/value.js";
import {
  type Answer,
  answerOrRefusal,
  errorAnswer,
  parseRequestJson,
  ServiceError,
} from "../../errors.js";
import { decodeProof } from "../../verification/anchor-answer.js";
import { postAnchorBodySchema } from "./contract.js";

const validatePostAnchorBody = bodyValidator(postAnchorBodySchema);

export interface AnchorTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
}

/** What `POST /anchors` queues once its body has been checked: the job that stores the proof. */
export interface AnchorStoreRequest {
  kind: "store";
  jobId: string;
  job: AnchorJob;
}

/**
 * `POST /anchors` from raw body bytes: a refusal to send, or the job that stores the proof.
 * The proof must parse and commit to `digest` (service.md §2); `invalid` and `mismatch`
 * results are refused with the anchor code.
 */
export function prepareAnchorPost(bytes: Uint8Array): Answer | AnchorStoreRequest {
  return answerOrRefusal(() => anchorStoreRequest(parseRequestJson(bytes)));
}

function anchorStoreRequest(body: JsonValue): Answer | AnchorStoreRequest {
  if (!isObject(body)) {
    throw new ServiceError("bad_request", {
      detail: "body must be an object {digest, proof, note?}",
    });
  }
  const digest = body.get("digest");
  const id = typeof digest === "string" ? anchorId(digest) : null;
  if (typeof digest === "string" && id === null) {
    throw new ServiceError("invalid_digest", {
      detail: "digest must be sha256: and 64 hex digits",
    });
  }
  const proofText = body.get("proof");
  const proof = typeof proofText === "string" ? decodeProof(proofText) : null;
  const violation = validatePostAnchorBody(body);
  if (violation !== null) throw new ServiceError("bad_request", { detail: violation });
  // The schema has required both members, so both decoded above.
  const documentId = id as string;
  const proofBytes = proof as Buffer;
  const result = verifyProof(proofBytes, documentId);
  if (result.status === "invalid" || result.status === "mismatch") {
    return errorAnswer("proof_rejected", { code: result.code, detail: result.detail });
  }
  const note = body.get("note");
  const proofSha256 = createHash("sha256").update(proofBytes).digest("hex");
  return {
    kind: "store",
    jobId: anchorJobId(documentId, proofSha256),
    job: {
      digest: documentId,
      proof: proofText as string,
      note: typeof note === "string" ? note : null,
      status: result.status,
      attestations: result.attestations.map(jobAttestation),
    },
  };
}
