/** `POST /verify` (service.md §1): the body goes, unparsed, to a worker that answers it. */
import type { FastifyInstance } from "fastify";
import { rawBody } from "../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../schemas/errors.js";
import type { VerifyAnswer, VerifyTask } from "../verify-request.js";

export interface VerifyRoutesOptions {
  /** File URL of the task module that answers a request (`workers/verify`). */
  taskModule: string;
}

interface VerifyQuery {
  require_anchor?: unknown;
  receipt?: unknown;
  /** Accepted and ignored until the digest cache exists. */
  cache?: unknown;
}

const flagSchema = (description: string) => ({
  description: `${description}; enabled by \`1\` or \`true\`, anything else disables it`,
});

const verifySchema = {
  querystring: {
    type: "object",
    properties: {
      require_anchor: flagSchema("missing anchors make the verdict PROVISIONAL"),
      receipt: flagSchema("add a signed verification receipt to each result"),
      cache: flagSchema("opt-in digest cache (not implemented yet: ignored)"),
    },
  },
  response: {
    200: {
      description: "a verdict payload plus `service`, or for a batch `{results, count, service}`",
      type: "object",
      additionalProperties: true,
    },
    400: errorResponseSchema,
    ...commonErrorResponses,
  },
} as const;

/**
 * Boolean query flags are parsed, not searched for (service.md §0): only `1` and `true`
 * enable. A repeated flag arrives as an array and, being neither, disables.
 */
export function queryFlag(value: unknown): boolean {
  return value === "1" || value === "true";
}

export async function verifyRoutes(app: FastifyInstance, options: VerifyRoutesOptions) {
  app.post<{ Querystring: VerifyQuery }>(
    "/verify",
    { schema: verifySchema, config: { access: "keyed" } },
    async (request, reply) => {
      // Node may carve a small body out of a shared Buffer pool, which cannot be moved to
      // another thread: copy it once into an ArrayBuffer of its own, then move that.
      const body = new Uint8Array(rawBody(request.body)).buffer;
      const task: VerifyTask = {
        body,
        requireAnchor: queryFlag(request.query.require_anchor),
        receipt: queryFlag(request.query.receipt),
      };
      const answer = await app.cpuPool.run<VerifyAnswer>(options.taskModule, task, [body]);
      return reply
        .code(answer.statusCode)
        .type("application/json; charset=utf-8")
        .send(answer.json);
    },
  );
}
