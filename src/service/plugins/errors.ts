/**
 * Every failure is a JSON error body with a stable code (service.md §0). A route's refusal is
 * a thrown `ServiceError`, answered here with the status the code has in `ERROR_STATUS` (a
 * header the refusal needs, such as Retry-After, is set on the reply before throwing: it is
 * kept). Unexpected faults are logged (content-free) and answered 500 with the request id and
 * nothing else: no message, no stack trace.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { unitsForRunTime } from "../cost.js";
import { WorkLimitExceededError } from "../cpu-pool.js";
import {
  CHARGED_REFUSALS,
  ERROR_STATUS,
  type ErrorCode,
  errorAnswer,
  ServiceError,
  sendAnswer,
} from "../errors.js";
import { documentPath, RouteList } from "../http/nearest-route.js";
import { escapedRefusal, withRetryAfter } from "../library-errors.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";
import { chargeUnits, chargeWorkDone } from "../work-charged.js";
import { REQUEST_ID_HEADER } from "./request-id.js";

function isClientError(error: FastifyError): boolean {
  return error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500;
}

function refuse(reply: FastifyReply, refusal: ServiceError): FastifyReply {
  return reply.code(refusal.status).send(refusal.body());
}

function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // A refusal, not a fault: nothing to log.
  if (error instanceof ServiceError) {
    if (CHARGED_REFUSALS.has(error.code)) chargeWorkDone(reply);
    return refuse(reply, error);
  }
  // A library error that names a condition of the service (overloaded, past its deadline, a
  // store that cannot be reached, a client gone): its refusal comes from the one table.
  // A task cut by its deadline consumed a thread until then: charged by that run time, on
  // every route that runs a task (docs/cost-bounds.md), so a 503 is no free way to burn CPU.
  if (error instanceof WorkLimitExceededError && error.ranMs > 0) {
    chargeWorkDone(reply);
    chargeUnits(reply, unitsForRunTime(error.ranMs));
  }
  const refusal = escapedRefusal(error);
  if (refusal !== null) return refuse(reply, withRetryAfter(reply, refusal));
  if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
    const limit = request.routeOptions.bodyLimit;
    return refuse(reply, new ServiceError("body_too_large", { limit }));
  }
  // Fastify's own refusals of a malformed request (a bad Content-Length, say) keep Fastify's
  // status, whatever the table says for the code.
  if (isClientError(error)) {
    return reply.code(error.statusCode ?? 400).send({ error: "bad_request" satisfies ErrorCode });
  }
  request.log.error({ err: error }, "unexpected fault");
  return reply
    .code(ERROR_STATUS.internal_error)
    .send({ error: "internal_error" satisfies ErrorCode, request_id: request.id });
}

/**
 * Refusals that happen before routing (a URL that cannot be decoded): no hook has run, so
 * the request id header is set here.
 */
export function handleFrameworkError(
  _error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  refuse(reply.header(REQUEST_ID_HEADER, request.id), new ServiceError("bad_request"));
}

/**
 * The methods each route path answers, so that a known path asked with another method is
 * `405 method_not_allowed` with `Allow` (RFC 9110 §15.5.6), and only an unknown path is 404.
 * Wildcard routes (static assets) are left out: they would make every path "known".
 */
class RouteMethods {
  readonly #routes: { pattern: RegExp; methods: Set<string> }[] = [];

  add(url: string, methods: string | string[]): void {
    if (url.includes("*")) return;
    const source = url
      .split("/")
      .map((segment) =>
        segment.startsWith(":") ? "[^/]+" : segment.replace(/[.+?^${}()|[\]\\]/g, "\\$&"),
      )
      .join("/");
    const pattern = new RegExp(`^${source}$`);
    let route = this.#routes.find((known) => known.pattern.source === pattern.source);
    if (route === undefined) {
      route = { pattern, methods: new Set() };
      this.#routes.push(route);
    }
    for (const method of [methods].flat()) route.methods.add(method);
  }

  /** The methods `path` answers, sorted; empty for a path no route has. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.#routes) {
      if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    }
    return [...methods].sort();
  }
}

/** Where every path and method is listed; `not_found` links it. */
const API_DOCUMENT = "/openapi.json";

/**
 * A path no route has: `404 not_found`, with the nearest known path when one is a few edits
 * away (`did_you_mean`, written as /openapi.json writes paths) and the methods it answers,
 * and a link to the document that lists them all (issue 37).
 */
function notFound(reply: FastifyReply, path: string, routes: RouteMethods, known: RouteList) {
  const nearest = known.nearest(path);
  if (nearest === null) {
    return sendAnswer(
      reply,
      errorAnswer("not_found", {
        detail: `no route has this path; every path and method is listed in ${API_DOCUMENT}`,
        docs: API_DOCUMENT,
      }),
    );
  }
  const methods = routes
    .allowed(nearest.replace(/:[A-Za-z0-9_]+/g, "x"))
    .filter((method) => method !== "HEAD" && method !== "OPTIONS");
  const suggestion = documentPath(nearest);
  const asked = methods.length > 0 ? `${methods.join("/")} ${suggestion}` : suggestion;
  return sendAnswer(
    reply,
    errorAnswer("not_found", {
      detail: `no route has this path; did you mean ${asked}? Every path and method is listed in ${API_DOCUMENT}`,
      did_you_mean: suggestion,
      docs: API_DOCUMENT,
    }),
  );
}

export function registerErrorHandling(app: FastifyInstance): void {
  const routes = new RouteMethods();
  const known = new RouteList();
  app.addHook("onRoute", (route) => {
    routes.add(route.url, route.method);
    known.add(route.url);
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    const allowed = routes.allowed(path);
    if (allowed.length === 0) return notFound(reply, path, routes, known);
    // A route that answers the method may still find nothing (`reply.callNotFound()`).
    if (allowed.includes(request.method)) return refuse(reply, new ServiceError("not_found"));
    const allow = allowed.join(", ");
    return refuse(
      reply.header("allow", allow),
      new ServiceError("method_not_allowed", {
        detail: `${request.method} is not offered here; this path answers ${allow}`,
      }),
    );
  });
}

export const errorHandling = fastifyPlugin(
  async (app: FastifyInstance) => registerErrorHandling(app),
  {
    name: PLATFORM.errors,
    fastify: FASTIFY_VERSION,
  },
);
