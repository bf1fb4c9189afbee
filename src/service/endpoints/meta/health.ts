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
import { route } from "../operation.js";
import { healthOperation, livenessOperation } from "./contract.js";

export async function healthRoutes(app: FastifyInstance) {
  route(app, healthOperation, {
    handler: async (_request, reply) => {
      const dependencies = await app.backends.health();
      const ok = dependencies.db !== "down" && dependencies.store !== "full";
      return reply.code(ok ? 200 : 503).send({ ok, ...dependencies });
    },
  });
  route(app, livenessOperation, { handler: async () => ({ ok: true }) });
}
