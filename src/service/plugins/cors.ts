/**
 * Browser access (issue 14): CORS for the configured origins (`CORS_ORIGINS`), by
 * @fastify/cors. Off unless origins are configured, so a deployment that does not ask for it
 * answers exactly as before.
 *
 * Preflights are answered in an `onRequest` hook registered before access control
 * (`plugins/access.ts`), because a browser sends no credentials with a preflight: it needs no
 * key, pays nothing and is not counted. A preflight from an origin that is not allowed falls
 * through to the router and gets the 404 every unknown `OPTIONS` gets.
 *
 * The server card's routes keep their own CORS answers (open to any origin, service.md §7):
 * they opt out with `config.cors: false`.
 */
import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { PAYMENT_HEADERS } from "../../payments/codec.js";
import { PASS_TOKEN_HEADER } from "../../payments/pass-token.js";
import { TRACE_RESPONSE_HEADER } from "../../tracing/tracing.js";
import type { CorsConfig } from "../config.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";
import { REQUEST_ID_HEADER } from "./request-id.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** `false`: @fastify/cors leaves this route's answers alone (it reads this member). */
    cors?: false;
  }
}

/** The URL of the catch-all `OPTIONS` route @fastify/cors adds for preflights. */
export const CORS_PREFLIGHT_ROUTE = "*";

/** Request headers a browser may send: credentials, payments, MCP, conditional reads. */
export const CORS_ALLOWED_HEADERS = [
  "authorization",
  "content-type",
  "x-svc-key",
  PAYMENT_HEADERS.signature,
  PAYMENT_HEADERS.xPayment,
  PASS_TOKEN_HEADER,
  "mcp-protocol-version",
  "if-none-match",
] as const;

/** Response headers a browser script may read besides the CORS-safelisted ones. */
export const CORS_EXPOSED_HEADERS = [
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "ratelimit-policy",
  "ratelimit",
  "retry-after",
  PAYMENT_HEADERS.required,
  PAYMENT_HEADERS.response,
  PAYMENT_HEADERS.xPaymentResponse,
  PASS_TOKEN_HEADER,
  REQUEST_ID_HEADER,
  // Only sent when tracing is on (issue 36): the W3C Trace Context Level 2 response header.
  TRACE_RESPONSE_HEADER,
  "etag",
  "location",
  "www-authenticate",
] as const;

const CORS_METHODS = ["GET", "HEAD", "POST"] as const;

/**
 * Registers CORS when origins are configured. Must be awaited before access control is
 * registered: hooks run in registration order, and the preflight must be answered first.
 */
export async function registerCors(app: FastifyInstance, config: CorsConfig): Promise<void> {
  const { origins } = config;
  if (origins !== "*" && origins.length === 0) return;
  const allowed = new Set(origins);
  // The catch-all preflight route declares no access class (access control refuses such a
  // route): it is keyless, and access control does not count it (CORS_PREFLIGHT_ROUTE).
  app.addHook("onRoute", (route) => {
    if (route.method === "OPTIONS" && route.url === CORS_PREFLIGHT_ROUTE) {
      route.config = { ...route.config, access: "keyless" };
    }
  });
  await app.register(cors, {
    // A list is matched exactly and the request's origin echoed (with `Vary: Origin`); an
    // origin not on it gets no CORS headers at all.
    origin:
      origins === "*"
        ? "*"
        : (origin, callback) => {
            callback(null, origin !== undefined && allowed.has(origin) ? origin : false);
          },
    credentials: false,
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: config.maxAgeSeconds,
    // A bare OPTIONS from an allowed origin (no Access-Control-Request-Method) gets the
    // same 204 rather than the plugin's text/plain 400, which is not the service's error shape.
    strictPreflight: false,
  });
}

/** Registered (and named) even when CORS is off, so access control can depend on its place. */
export const corsPlugin = fastifyPlugin(
  async (app: FastifyInstance) => registerCors(app, app.serviceConfig.cors),
  {
    name: PLATFORM.cors,
    fastify: FASTIFY_VERSION,
    dependencies: [PLATFORM.config],
    decorators: { fastify: ["serviceConfig"] },
  },
);
