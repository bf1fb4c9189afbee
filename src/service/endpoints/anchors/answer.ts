/**
 * Worker-side handling of the OpenTimestamps endpoints (service.md §1 `POST /verify-anchor`,
 * §2 `POST /anchors`): strict parsing, request checks, proof parsing and verification all
 * run on a CPU-pool thread (`worker.ts`); the main thread only forwards answers and
 * submits store jobs.
 *
 * Where the request stops and the verdict starts: a member that cannot be decoded into what
 * the verifier takes (a proof that is not standard base64, a header that is not hex, a
 * height that is not a non-negative integer) or a body of the wrong shape is a `400`. What
 * the decoded values say is the verifier's verdict, a `200` AnchorResult: an unusable digest
 * string is `invalid`/`bad_digest`, a hex header that is not 80 bytes `invalid`/`bad_header`,
 * bytes that are not a proof `invalid`/<parse code>.
 */
import { createHash } from "node:crypto";
import {
  type AnchorJob,
  anchorId,
  anchorJobId,
  jobAttestation,
} from "../../../../queues/anchors.js";
import { bodyValidator } from "../../../validation/body-validator.js";
import { type AnchorResult, verifyProof } from "../../../verifier/anchor/index.js";
import { isObject, type JsonObject, type JsonValue } from "../../../verifier/json/value.js";
import {
  type Answer,
  answer,
  answerOrRefusal,
  errorAnswer,
  parseRequestJson,
  ServiceError,
} from "../../errors.js";
import { SERVICE_NAME } from "../../service-name.js";
import {
  BASE64_PATTERN,
  HEIGHT_KEY_PATTERN,
  HEX_PATTERN,
  postAnchorBodySchema,
  verifyAnchorBodySchema,
} from "./contract.js";

const BASE64 = new RegExp(BASE64_PATTERN);
const HEX = new RegExp(HEX_PATTERN);
const HEIGHT_KEY = new RegExp(HEIGHT_KEY_PATTERN);

const validateVerifyAnchorBody = bodyValidator(verifyAnchorBodySchema);
const validatePostAnchorBody = bodyValidator(postAnchorBodySchema);

/** The proof's bytes; not canonical standard base64 is `invalid_proof_encoding`. */
function decodeProof(proof: string): Buffer {
  const bytes = BASE64.test(proof) ? Buffer.from(proof, "base64") : null;
  // The round trip also refuses non-zero padding bits, so each proof has one spelling.
  if (bytes === null || bytes.toString("base64") !== proof) {
    throw new ServiceError("invalid_proof_encoding", {
      detail: "proof must be standard base64 with padding",
    });
  }
  return bytes;
}

function isHeight(value: JsonValue | undefined): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function decodeHeader(header: string, where: string): Buffer {
  if (HEX.test(header)) return Buffer.from(header, "hex");
  throw new ServiceError("invalid_header_encoding", {
    detail: `${where} must be hex (an even number of hex digits)`,
  });
}

/** Block headers by height from `headers`, or from `header` + `height`. */
function decodeHeaders(body: JsonObject): Map<number, Buffer> {
  const headers = new Map<number, Buffer>();
  const many = body.get("headers");
  const one = body.get("header");
  const height = body.get("height");
  if (many !== undefined && (one !== undefined || height !== undefined)) {
    throw new ServiceError("bad_request", {
      detail: "give either headers or header with height, not both",
    });
  }
  if (isObject(many)) {
    for (const [key, value] of many) {
      const keyHeight = HEIGHT_KEY.test(key) ? Number(key) : Number.NaN;
      if (!isHeight(keyHeight)) {
        throw new ServiceError("invalid_height", {
          detail: `headers key '${key}' is not a non-negative integer`,
        });
      }
      if (typeof value !== "string") continue; // the schema names the wrong type
      headers.set(keyHeight, decodeHeader(value, `headers['${key}']`));
    }
  }
  if (height !== undefined && !isHeight(height)) {
    throw new ServiceError("invalid_height", { detail: "height must be a non-negative integer" });
  }
  if (typeof one === "string") {
    const header = decodeHeader(one, "header");
    if (height === undefined) {
      throw new ServiceError("bad_request", { detail: "header needs its height" });
    }
    headers.set(height, header);
  } else if (one === undefined && height !== undefined) {
    throw new ServiceError("bad_request", { detail: "height is given without a header" });
  }
  return headers;
}

/** The AnchorResult (without `service`) of a strictly parsed body; a refusal is thrown. */
function verifiedAnchor(body: JsonValue): AnchorResult {
  if (!isObject(body)) {
    throw new ServiceError("bad_request", {
      detail: "body must be an object {proof, digest, headers?}",
    });
  }
  const proofText = body.get("proof");
  const proof = typeof proofText === "string" ? decodeProof(proofText) : null;
  const headers = decodeHeaders(body);
  const violation = validateVerifyAnchorBody(body);
  if (violation !== null) throw new ServiceError("bad_request", { detail: violation });
  // The schema has required a string digest and a proof, which decoded above.
  const digest = body.get("digest") as string;
  return verifyProof(proof as Buffer, digest, headers);
}

export interface VerifyAnchorAnswer {
  statusCode: number;
  /** An AnchorResult (200) or an error body, without `service`. */
  payload: object;
}

/**
 * `POST /verify-anchor` for an already strictly parsed body, unserialised, for the MCP tool
 * `verify_anchor`, which wraps it in its own answer. Pure and synchronous: call it on a worker
 * thread.
 */
export function answerVerifyAnchor(body: JsonValue): VerifyAnchorAnswer {
  try {
    return { statusCode: 200, payload: verifiedAnchor(body) };
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    return { statusCode: error.status, payload: error.body() };
  }
}

/** What `POST /anchors` queues once its body has been checked: the job that stores the proof. */
export interface AnchorStoreRequest {
  kind: "store";
  jobId: string;
  job: AnchorJob;
}

export interface AnchorTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
}

/** `POST /verify-anchor` from raw body bytes. */
export function answerVerifyAnchorRequest(bytes: Uint8Array): Answer {
  return answerOrRefusal(() =>
    answer(200, { ...verifiedAnchor(parseRequestJson(bytes)), service: SERVICE_NAME }),
  );
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
