/** `GET /health` (service.md §11): the process is up and serving. */
import type { FastifyInstance } from "fastify";

const healthSchema = {
  description: "liveness: 200 {ok: true} while the service can answer",
  response: {
    200: {
      type: "object",
      required: ["ok"],
      properties: { ok: { type: "boolean" } },
    },
  },
} as const;

export async function healthRoutes(app: FastifyInstance) {
  app.get("/health", { schema: healthSchema, config: { access: "keyless" } }, async () => ({
    ok: true,
  }));
}
