/**
 * The names of the platform's plugins (fastify-plugin `name`s). A plugin lists the ones it
 * needs in its `dependencies`, so a plugin registered without them, or before them, fails at
 * boot with Fastify's "The dependency '…' of plugin '…' is not registered" rather than with
 * an undefined decoration on the first request. Endpoints may list them too.
 */
export const PLATFORM = {
  // What the app holds (decorations), in the order `platform.ts` opens it.
  config: "receiptd-config",
  lifecycle: "receiptd-lifecycle",
  identity: "receiptd-identity",
  metrics: "receiptd-metrics",
  connections: "receiptd-connections",
  backends: "receiptd-backends",
  cpuPool: "receiptd-cpu-pool",
  queues: "receiptd-queues",
  accessServices: "receiptd-access-services",
  /** Registered by `buildApp` with the verify endpoint's task (verification/). */
  bundleVerifications: "receiptd-bundle-verifications",
  // What every request goes through (hooks, parsers, handlers), in registration order.
  requestId: "receiptd-request-id",
  abortLogging: "receiptd-abort-logging",
  requestMetrics: "receiptd-request-metrics",
  errors: "receiptd-errors",
  connectionHooks: "receiptd-connection-hooks",
  rawBody: "receiptd-raw-body",
  cors: "receiptd-cors",
  access: "receiptd-access",
  idempotency: "receiptd-idempotency",
  bodyForm: "receiptd-body-form",
  bodyAdmission: "receiptd-body-admission",
  schemas: "receiptd-schemas",
  openApiCollector: "receiptd-openapi-collector",
  /** All of the above, as `platform.ts` composes them. */
  platform: "receiptd-platform",
} as const;

/** The Fastify major the plugins are written for (fastify-plugin checks it at registration). */
export const FASTIFY_VERSION = "5.x";
