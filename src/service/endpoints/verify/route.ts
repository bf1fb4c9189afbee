/**
 * `POST /verify` (service.md §1): the body goes, unparsed, to the shared bundle verification
 * (`verification/bundle-verifications.ts`: the digest cache, then a worker that answers it).
 */

import type { FastifyInstance } from "fastify";
import { sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { rawBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { verdictBatchSchema, verdictPayloadSchema } from "../../schemas/verdict.js";

interface VerifyQuery {
  require_anchor?: unknown;
  receipt?: unknown;
  cache?: unknown;
}

const flagSchema = (description: string) => ({
  description: `${description}; enabled by \`1\` or \`true\`, anything else disables it`,
});

const verifySchema = {
  description:
    "verify a bundle, {bundle}, or a batch {bundles: [...]} of at most 50; verdicts are 200s",
  body: {
    description:
      "a bundle object; or {bundle: <bundle>}; or {bundles: [<bundle>, …]} (a batch, ≤ 50 items). " +
      "Parsed strictly: UTF-8, no duplicate members, no trailing data",
    type: "object",
    properties: {
      bundle: { type: "object", description: "form 2: the bundle to verify" },
      bundles: { type: "array", description: "form 3: a batch, verified in order" },
    },
  },
  querystring: {
    type: "object",
    properties: {
      require_anchor: flagSchema("missing anchors make the verdict PROVISIONAL"),
      receipt: flagSchema("add a signed verification receipt to each result"),
      cache: flagSchema(
        "opt-in digest cache for single bundles (900 s, 256 entries; ignored for batches)",
      ),
    },
  },
  response: {
    200: {
      description: "a verdict payload plus `service`, or for a batch `{results, count, service}`",
      type: "object",
      anyOf: [verdictPayloadSchema, verdictBatchSchema],
    },
    400: errorResponseSchema,
    ...commonErrorResponses,
  },
} as const;

/**
 * The 400 answers, naming the configured result budget so that `/openapi.json` states the
 * limit a deployment applies (as `/info` does).
 */
function refusalsSchema(maxResultBytes: number) {
  return {
    ...errorResponseSchema,
    description:
      "`invalid_json`, `bad_shape`, `batch_too_large` (`limit`: bundles per batch), or " +
      "`result_too_large`: the errors and reasons of the request's verdicts would take more " +
      `than ${maxResultBytes} bytes of the answer (\`limit\`; \`max_result_bytes\` in ` +
      "GET /info); verification stops there",
  };
}

/**
 * Boolean query flags are parsed, not searched for (service.md §0): only `1` and `true`
 * enable. A repeated flag arrives as an array and, being neither, disables.
 */
export function queryFlag(value: unknown): boolean {
  return value === "1" || value === "true";
}

export async function verifyRoutes(app: FastifyInstance) {
  app.post<{ Querystring: VerifyQuery }>(
    "/verify",
    {
      schema: {
        ...verifySchema,
        response: {
          ...verifySchema.response,
          400: refusalsSchema(app.serviceConfig.limits.maxResultBytes),
        },
      },
      config: { access: "keyed" },
    },
    async (request, reply) => {
      const answer = await app.bundleVerifications.verify(
        rawBody(request.body),
        {
          requireAnchor: queryFlag(request.query.require_anchor),
          receipt: queryFlag(request.query.receipt),
          cache: queryFlag(request.query.cache),
        },
        { clientGone: clientGone(reply) },
      );
      return sendAnswer(reply, answer);
    },
  );
}
