/**
 * The platform: what the app holds, then what every request goes through, as named
 * fastify-plugin plugins (names.ts). The order below is the order of the hooks (Fastify runs
 * a hook's functions in registration order); each plugin's `dependencies` make a wrong order
 * fail at boot instead of at the first request.
 */
import type { FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { RedisOutages } from "../../redis/outages.js";
import type { ServiceConfig } from "../config.js";
import { bodyAdmission, rawBodyParser } from "../http/body-admission.js";
import { bodyForm } from "../http/body-form.js";
import { type ConnectionGuard, connectionHooks } from "../http/connections.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";
import { accessControl } from "./access.js";
import { corsPlugin } from "./cors.js";
import { errorHandling } from "./errors.js";
import { idempotency } from "./idempotency.js";
import { abortLogging } from "./logging.js";
import { requestMetrics } from "./metrics.js";
import { requestIdHeader } from "./request-id.js";
import {
  accessServicesPlugin,
  backendsPlugin,
  configPlugin,
  connectionsPlugin,
  cpuPoolPlugin,
  identityPlugin,
  lifecyclePlugin,
  metricsPlugin,
  type OpenedResources,
  queuesPlugin,
} from "./resources.js";
import { schemaValidation } from "./schemas.js";

export interface PlatformOptions {
  config: ServiceConfig;
  clock: () => number;
  /** Made before Fastify, whose HTTP server it creates. */
  connections: ConnectionGuard;
  /** Owned by the caller, which closes it when the start fails. */
  opened: OpenedResources;
  /** The buffered standard output, closed last; null when the log goes elsewhere. */
  log: { close(): void } | null;
}

export const platform = fastifyPlugin<PlatformOptions>(
  async (app: FastifyInstance, options) => {
    const { config, clock, connections, opened, log } = options;
    app.register(configPlugin, { config, clock });
    app.register(lifecyclePlugin, { opened, log });
    app.register(connectionsPlugin, { guard: connections });
    app.register(identityPlugin);
    app.register(metricsPlugin);
    // One per process: the shared Redis connection and the queues' report one outage once.
    const outages = new RedisOutages(app.log);
    app.register(backendsPlugin, { outages });
    app.register(cpuPoolPlugin);
    app.register(queuesPlugin, { outages });
    app.register(accessServicesPlugin);

    app.register(requestIdHeader);
    app.register(abortLogging);
    app.register(requestMetrics);
    app.register(errorHandling);
    app.register(connectionHooks);
    app.register(rawBodyParser);
    app.register(corsPlugin);
    app.register(accessControl);
    app.register(idempotency);
    app.register(bodyForm);
    app.register(bodyAdmission);
    app.register(schemaValidation);
  },
  { name: PLATFORM.platform, fastify: FASTIFY_VERSION },
);
