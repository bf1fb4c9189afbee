/**
 * The Fastify application (architecture.md): built here, listened on elsewhere
 * (`server.ts`), so tests drive the same app with `inject()` or a socket on port 0.
 * `buildApp` composes: Fastify, the platform (plugins/platform.ts), then the endpoints.
 */
import Fastify, { type FastifyInstance } from "fastify";
import { activeTracing } from "../tracing/tracing.js";
import type { ServiceConfig } from "./config.js";
import { endpoints } from "./endpoints/index.js";
import { openApiCollector } from "./endpoints/meta/openapi.js";
import { verifyTask } from "./endpoints/verify/contract.js";
import { ConnectionGuard } from "./http/connections.js";
import { handleFrameworkError } from "./plugins/errors.js";
import { bufferedStdout, loggingOptions } from "./plugins/logging.js";
import { platform } from "./plugins/platform.js";
import { generateRequestId } from "./plugins/request-id.js";
import { OpenedResources } from "./plugins/resources.js";
import { bundleVerificationsPlugin } from "./verification/bundle-verifications.js";

/** Longer than any request line Node accepts (16 KiB of headers, request line included). */
const MAX_PATH_PARAMETER_CHARACTERS = 16 * 1024;

export interface BuildOptions {
  /** The clock behind cache ages and expiry; defaults to `Date.now`. */
  clock?: () => number;
}

/**
 * Builds the app without listening. Creates the service key in `config.dataDir` on first
 * use and starts the worker threads; `app.close()` releases both.
 */
export async function buildApp(
  config: ServiceConfig,
  options: BuildOptions = {},
): Promise<FastifyInstance> {
  const connections = new ConnectionGuard(config.http, config.trustProxy);
  const stdoutLog = config.logDestination === undefined ? bufferedStdout() : null;
  const app = Fastify({
    ...loggingOptions(config, stdoutLog ?? config.logDestination),
    serverFactory: connections.serverFactory,
    clientErrorHandler: connections.clientError,
    bodyLimit: config.limits.maxBodyBytes,
    genReqId: generateRequestId,
    frameworkErrors: handleFrameworkError,
    // While draining, requests already on open connections are still answered normally
    // (with `Connection: close`) rather than with Fastify's own 503 body.
    return503OnClosing: false,
    // Fastify routes path parameters of at most 100 characters and refuses longer ones with 400
    // before routing. Issuers are the one free-form parameter (a did:web can be long) and the
    // reference answers 404 for any of them, so every parameter is routed: Node's 16 KiB
    // header limit already bounds the request line.
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_CHARACTERS },
    // `request.ip` is the socket's peer unless TRUST_PROXY names the proxies in front.
    trustProxy: config.trustProxy,
  });

  const opened = new OpenedResources();
  const clock = options.clock ?? Date.now;
  // Before everything else, so that @fastify/otel wraps every route and its request span is
  // the first thing a request opens. Only when tracing is on: off, the app has no trace hook.
  const tracing = activeTracing();
  if (tracing !== null) await app.register(tracing.fastifyPlugin);
  try {
    await app.register(platform, { config, clock, connections, opened, log: stdoutLog });
  } catch (error) {
    // The app never started, so its onClose does not run: close what the platform opened.
    await opened.close();
    stdoutLog?.close();
    throw error;
  }
  app.register(bundleVerificationsPlugin, { task: verifyTask });
  await app.register(openApiCollector);
  app.register(endpoints);
  return app;
}
