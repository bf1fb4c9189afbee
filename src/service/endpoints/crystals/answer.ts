/**
 * Worker-side handling of memory crystals (service.md §6), run on a CPU-pool thread
 * (`worker.ts`): `POST /crystals` bodies are parsed strictly and checked against every
 * envelope rule there, and lineages are built there from the stored summaries. The main thread
 * only does the storage (src/crystals/store.ts) and sends what it gets back.
 */
import { isCrystalRefusal, validateEnvelope } from "../../../crystals/envelope.js";
import { lineageJson, lineageSummary } from "../../../crystals/lineage.js";
import type { PreparedCrystal } from "../../../crystals/store.js";
import { bodyValidator } from "../../../validation/body-validator.js";
import type { JsonValue } from "../../../verifier/json/value.js";
import {
  type Answer,
  type ErrorCode,
  errorAnswer,
  errorAnswerOf,
  parseRequestJson,
} from "../../errors.js";
import { crystalEnvelopeSchema } from "./contract.js";

const validateEnvelopeSchema = bodyValidator(crystalEnvelopeSchema);

export interface CrystalPostTask {
  kind: "post";
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
  maxCiphertextBytes: number;
}

export interface CrystalLineageTask {
  kind: "lineage";
  tenantHash: string;
  /** The tenant's stored summary documents. */
  summaries: Uint8Array[];
}

export type CrystalTask = CrystalPostTask | CrystalLineageTask;

/** A refusal, to send as it is; or the documents to store. */
export type CrystalPostAnswer =
  | ({ kind: "reply" } & Answer)
  | ({ kind: "store" } & PreparedCrystal);

function reply(answer: Answer): CrystalPostAnswer {
  return { kind: "reply", ...answer };
}

/** `POST /crystals` from raw body bytes: a refusal, or the documents to store. */
export function prepareCrystalPost(
  bytes: Uint8Array,
  limits: { maxCiphertextBytes: number },
): CrystalPostAnswer {
  let body: JsonValue;
  try {
    body = parseRequestJson(bytes);
  } catch (error) {
    return reply(errorAnswerOf(error));
  }
  const crystal = validateEnvelope(body, limits);
  if (isCrystalRefusal(crystal)) {
    const { error, ...fields } = crystal;
    return reply(errorAnswer(error satisfies ErrorCode, fields));
  }
  // The rules above are finer than the published schema; this keeps the two from drifting.
  const violation = validateEnvelopeSchema(body);
  if (violation !== null) return reply(errorAnswer("bad_envelope", { detail: violation }));
  // Copies: Buffers may share a pooled ArrayBuffer, and these are moved to the main thread.
  return {
    kind: "store",
    crystalId: crystal.crystalId,
    parentCrystalId: crystal.parentCrystalId,
    tenantHash: crystal.tenantHash,
    sizeBytes: crystal.sizeBytes,
    envelope: new Uint8Array(crystal.canonical),
    summary: new Uint8Array(lineageSummary(crystal)),
  };
}

/** `GET /crystals/lineage`'s body for a tenant, from its summaries. */
export function answerLineage(task: CrystalLineageTask): string {
  return lineageJson(task.tenantHash, task.summaries);
}
