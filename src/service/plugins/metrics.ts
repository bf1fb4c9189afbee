/**
 * Request durations for `/metrics`, labelled by route pattern and status: `onResponse` runs
 * once per answered request, refusals from the access plugin and the error handler included.
 */
import type { FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { UNMATCHED_ROUTE } from "../../metrics/metrics.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";

export function registerRequestMetrics(app: FastifyInstance): void {
  // Callback-style: it never waits, so no promise per request (issue 33).
  app.addHook("onResponse", (request, reply, done) => {
    app.metrics.requestDuration.observe(
      {
        method: request.method,
        // The pattern (`/anchors/:digest`), never the URL: label values stay bounded.
        route: request.routeOptions.url ?? UNMATCHED_ROUTE,
        status: reply.statusCode,
      },
      reply.elapsedTime / 1000,
    );
    done();
  });
}

export const requestMetrics = fastifyPlugin(
  async (app: FastifyInstance) => registerRequestMetrics(app),
  {
    name: PLATFORM.requestMetrics,
    fastify: FASTIFY_VERSION,
    dependencies: [PLATFORM.metrics],
    decorators: { fastify: ["metrics"] },
  },
);
