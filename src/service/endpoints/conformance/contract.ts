/**
 * The contract of `POST /conformance` (service.md §10): its operation, schemas and worker
 * task. The route and `worker.ts` share it.
 */
import { SECTIONS } from "../../../conformance/corpus.js";
import {
  CONFORMANCE_REPORT_KIND,
  CONFORMANCE_REPORT_VERSION,
  CONFORMANCE_VERDICTS,
} from "../../../conformance/grade.js";
import { submissionSchema } from "../../../conformance/submission.js";
import type { Answer } from "../../errors.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { ConformanceTask } from "./answer.js";

export const conformanceTask = defineTask<ConformanceTask, Promise<Answer>>(import.meta.url);

export const sha256Digest = { type: "string", pattern: "^sha256:[0-9a-f]{64}$" } as const;

const sectionNames = { propertyNames: { enum: SECTIONS } } as const;

/** `{<section>: {vectors, manifest_digest}}`: the report's `corpus`, and `/info`'s. */
const corpusSummarySchema = {
  type: "object",
  description: "the deployed corpus sections: vector count and sha256 of the manifest's bytes",
  ...sectionNames,
  additionalProperties: {
    type: "object",
    required: ["vectors", "manifest_digest"],
    properties: { vectors: { type: "integer" }, manifest_digest: sha256Digest },
  },
} as const;

const sectionResultSchema = {
  type: "object",
  required: ["matched", "total", "mismatches"],
  properties: {
    matched: { type: "integer" },
    total: { type: "integer" },
    mismatches: {
      type: "array",
      description: "the vectors that did not match, in manifest order",
      items: {
        type: "object",
        required: ["id", "reason", "expected", "got"],
        properties: {
          id: { type: "string", description: "manifest file name or case label" },
          reason: { type: "string", description: "the first grading rule the answer broke" },
          expected: { type: "object", description: "what the manifest pins" },
          got: { description: "the submitted answer, null when there was none" },
        },
      },
    },
  },
} as const;

const reportSchema = {
  type: "object",
  description: "signed by the service key: Ed25519 over the canonical (JCS) report without `sig`",
  required: [
    "kind",
    "version",
    "implementation",
    "submission_digest",
    "corpus",
    "results",
    "verdict",
    "issued_at",
    "issuer",
    "sig",
  ],
  properties: {
    kind: { const: CONFORMANCE_REPORT_KIND },
    version: { const: CONFORMANCE_REPORT_VERSION },
    implementation: { type: "object", description: "as submitted" },
    submission_digest: { ...sha256Digest, description: "sha256 of the canonical submission" },
    corpus: corpusSummarySchema,
    results: {
      type: "object",
      description: "one member per deployed corpus section",
      ...sectionNames,
      additionalProperties: sectionResultSchema,
    },
    verdict: { enum: CONFORMANCE_VERDICTS },
    issued_at: { type: "string", description: "YYYY-MM-DDTHH:MM:SSZ" },
    issuer: { type: "string", description: "the service's did:key (published at /info)" },
    sig: {
      type: "object",
      required: ["alg", "key", "value"],
      properties: {
        alg: { const: "ed25519" },
        key: { type: "string", description: "the issuer" },
        value: { type: "string", description: "base64url, no padding" },
      },
    },
  },
} as const;

const conformanceSchema = {
  description:
    "grades an implementation's answers over the pinned conformance corpus and returns a " +
    "signed conformance report; 503 corpus_not_deployed when no corpus is deployed",
  body: submissionSchema,
  response: {
    200: {
      type: "object",
      required: ["report", "service"],
      properties: { report: reportSchema, service: { type: "string" } },
    },
    400: errorResponseSchema,
    ...commonErrorResponses,
  },
} as const;

export const gradeConformanceOperation = defineOperation({
  method: "POST",
  url: "/conformance",
  operationId: "gradeConformance",
  summary: "Grade an implementation's answers",
  tag: "conformance",
  access: "keyed",
  refusals: [],
  schema: conformanceSchema,
});
