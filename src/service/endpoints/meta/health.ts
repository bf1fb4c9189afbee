/**
 * `GET /health` (service.md §11): `{"ok": true}` when embedded; in distributed mode also the
 * state of Redis and PostgreSQL. Only a document store that cannot answer makes it 503: keys,
 * anchors and receipts all live there. A Redis outage is reported but stays 200, because the
 * service keeps verifying through it (caps fall back to per-process counts; paid calls get
 * 503 on their own) — a load balancer must not take every instance out for a Redis blip.
 */
import type { FastifyInstance } from "fastify";

const dependency = { type: "string", enum: ["up", "down"] } as const;

const healthBody = {
  type: "object",
  required: ["ok"],
  properties: { ok: { type: "boolean" }, redis: dependency, db: dependency },
} as const;

const healthSchema = {
  description:
    "liveness and dependencies: {ok, redis?, db?}; 503 when the document store is unreachable",
  response: { 200: healthBody, 503: healthBody },
} as const;

export async function healthRoutes(app: FastifyInstance) {
  app.get(
    "/health",
    { schema: healthSchema, config: { access: "keyless" } },
    async (_request, reply) => {
      const dependencies = await app.backends.health();
      const ok = dependencies.db !== "down";
      return reply.code(ok ? 200 : 503).send({ ok, ...dependencies });
    },
  );
}
