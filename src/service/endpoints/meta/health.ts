/**
 * `GET /health` (service.md §11): readiness. `{"ok": true}` when embedded; in distributed mode
 * also the state of Redis and PostgreSQL. A document store that cannot answer makes it 503:
 * keys, anchors and receipts all live there. So does, in embedded mode, a disk that refused a
 * write for lack of space (`"store":"full"`, until space is back); under `STORE_MIN_FREE_BYTES`
 * free it stays 200 and says `"store":"low_space"`. A Redis outage is reported but stays 200,
 * because the service keeps verifying through it (caps fall back to per-process counts; paid
 * calls get 503 on their own) — a load balancer must not take every instance out for a Redis
 * blip.
 *
 * `GET /health/live`: liveness. 200 `{"ok": true}` whenever the process answers HTTP, whatever
 * its dependencies, so that an orchestrator restarts a hung process but not a healthy one
 * waiting for its disk or database.
 */
import type { FastifyInstance } from "fastify";

const dependency = { type: "string", enum: ["up", "down"] } as const;

const healthBody = {
  type: "object",
  required: ["ok"],
  properties: {
    ok: { type: "boolean" },
    redis: dependency,
    db: dependency,
    store: { type: "string", enum: ["low_space", "full"] },
  },
} as const;

const healthSchema = {
  description:
    "readiness and dependencies: {ok, redis?, db?, store?}; 503 when the document store is unreachable or its disk is full",
  response: { 200: healthBody, 503: healthBody },
} as const;

const liveSchema = {
  description: "liveness: 200 {ok: true} whenever the process answers, whatever its dependencies",
  response: {
    200: { type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } },
  },
} as const;

export async function healthRoutes(app: FastifyInstance) {
  app.get(
    "/health",
    { schema: healthSchema, config: { access: "keyless" } },
    async (_request, reply) => {
      const dependencies = await app.backends.health();
      const ok = dependencies.db !== "down" && dependencies.store !== "full";
      return reply.code(ok ? 200 : 503).send({ ok, ...dependencies });
    },
  );
  app.get("/health/live", { schema: liveSchema, config: { access: "keyless" } }, async () => ({
    ok: true,
  }));
}
