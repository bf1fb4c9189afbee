/** `POST /verify` (service.md §1): the body goes, unparsed, to a worker that answers it. */

import type { FastifyInstance } from "fastify";
import { type CachedVerdict, digestCacheKey } from "../../../cache/digest-cache.js";
import { sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { rawBody, transferableBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { verdictBatchSchema, verdictPayloadSchema } from "../../schemas/verdict.js";
import { type CacheableVerdict, cachedVerdictResponse, type VerifyTask } from "./answer.js";
import { verifyTask } from "./tasks.js";

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
      config: { access: "keyed", idempotent: "paid" },
    },
    async (request, reply) => {
      const requireAnchor = queryFlag(request.query.require_anchor);
      const receipt = queryFlag(request.query.receipt);
      const cache = queryFlag(request.query.cache);
      const raw = rawBody(request.body);
      const cacheKey = cache ? digestCacheKey(raw, requireAnchor) : null;
      const json = (text: string) => sendAnswer(reply, { statusCode: 200, json: text });

      if (cacheKey !== null) {
        const hit = await cachedEntry(app, cacheKey);
        if (hit !== null) {
          const ageSeconds = Math.max(0, Math.floor((app.clock() - hit.storedAtMs) / 1000));
          return json(cachedVerdictResponse(hit, receipt, { hit: true, ageSeconds }));
        }
      }
      const body = transferableBody(raw);
      const task: VerifyTask = { body, requireAnchor, receipt, cache };
      const outcome = await app.cpuPool.run(verifyTask, task, [body], {
        clientGone: clientGone(reply),
      });
      app.metrics.countVerdicts(outcome.verdicts);
      if ("cacheable" in outcome) {
        if (cacheKey !== null) await remember(app, cacheKey, outcome.cacheable);
        return json(cachedVerdictResponse(outcome.cacheable, receipt, { hit: false }));
      }
      return sendAnswer(reply, outcome);
    },
  );
}

/**
 * The cache is an optimisation: when it cannot be read (Redis briefly down, in distributed
 * mode) the request is verified as if it were a miss, and a failed write loses only the
 * entry. Neither fails the request.
 */
async function cachedEntry(app: FastifyInstance, key: string): Promise<CachedVerdict | null> {
  try {
    const entry = await app.digestCache.get(key);
    app.metrics.digestCache.inc({ result: entry === null ? "miss" : "hit" });
    return entry;
  } catch (error) {
    app.metrics.digestCache.inc({ result: "error" });
    app.log.warn({ err: error }, "digest cache unavailable; verifying without it");
    return null;
  }
}

async function remember(app: FastifyInstance, key: string, verdict: CacheableVerdict) {
  try {
    await app.digestCache.set(key, verdict);
  } catch (error) {
    app.log.warn({ err: error }, "digest cache unavailable; verdict not cached");
  }
}
