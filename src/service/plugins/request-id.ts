/**
 * Every response carries `X-Request-Id` (service.md §0). Ids are generated here, never taken
 * from the client, so a log line's id always names exactly one request.
 */
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";

export const REQUEST_ID_HEADER = "x-request-id";

export function generateRequestId(): string {
  return randomUUID();
}

/** Set on arrival, so error and not-found replies carry it too. */
export function registerRequestIdHeader(app: FastifyInstance): void {
  // Callback-style: a hook that never waits needs no promise per request (issue 33).
  app.addHook("onRequest", (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
}

export const requestIdHeader = fastifyPlugin(
  async (app: FastifyInstance) => registerRequestIdHeader(app),
  {
    name: PLATFORM.requestId,
    fastify: FASTIFY_VERSION,
  },
);
