/**
 * Who may call what (service.md §9). Every route declares its access class in its route
 * config, and registration fails for a route that does not, so no endpoint can be added
 * without deciding whether it is paid for.
 *
 * Until the access issue lands (API keys, caps, x402), keyed routes are open: `keyedAccess`
 * grants every request. That function is the one place the access work fills in; routes that
 * decide access per message (MCP's `tools/call`) ask it too.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ANONYMOUS, type Principal } from "../../access/principal.js";

/**
 * - `keyed`: an API key or an x402 payment per call (verification, anchors, conformance);
 * - `leased`: an API key, or an x402 lease / day pass (ERC-8004 validation, crystal writes);
 * - `keyless`: anyone, counted against the anonymous cap (reads, metadata);
 * - `mixed`: the route decides per request with `keyedAccess` (MCP: discovery is keyless,
 *   `tools/call` is keyed);
 * - `internal`: loopback plus the internal token (settlement ingestion).
 */
export type RouteAccess = "keyed" | "leased" | "keyless" | "mixed" | "internal";

declare module "fastify" {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    /**
     * Who the request is counted against once access is checked: `key:<id>`,
     * `x402:<payer>` or `anonymous`. Tenancy (crystals) and audit lines use it.
     */
    principal: Principal;
  }
}

/** The outcome of checking a request's credentials for keyed work. */
export type AccessDecision =
  | { granted: true }
  | { granted: false; statusCode: number; body: object };

/** Whether `request` may do keyed work. Open until API keys and payments exist. */
export function keyedAccess(_request: FastifyRequest): AccessDecision {
  return { granted: true };
}

export function registerAccessControl(app: FastifyInstance): void {
  app.decorateRequest("principal", ANONYMOUS);
  app.addHook("onRoute", (route) => {
    // Fastify adds HEAD twins of GET routes; they share the GET route's config.
    if (route.method === "HEAD") return;
    if (route.config?.access === undefined) {
      throw new Error(`route ${String(route.method)} ${route.url} declares no access class`);
    }
  });
  app.addHook("preHandler", async (request, reply) => {
    const access = request.routeOptions.config.access;
    if (access !== "keyed" && access !== "leased") return;
    const decision = keyedAccess(request);
    if (!decision.granted) return reply.code(decision.statusCode).send(decision.body);
  });
}
