/**
 * Traces across processes (issue 36): the one door the rest of the code goes through.
 *
 * Off by default, and free when off: this module imports nothing from OpenTelemetry at run
 * time (types only), so a process without `OTEL_EXPORTER_OTLP_ENDPOINT` loads no SDK,
 * registers no hook and does no per-request work. The instrumented places (the Redis
 * connection's `run`, the PostgreSQL query path, the CPU pool, the BullMQ queues and workers,
 * the Fastify app) ask `activeTracing()` and carry on untouched when it is null: one
 * comparison. `startTracing` loads the SDK (sdk.ts) with a dynamic import only when the
 * configuration turns tracing on.
 *
 * Spans carry no request content, the same rule as the logs: key ids, routes, statuses, sizes
 * and timings. sdk.ts also scrubs what the libraries would add on their own (query
 * strings, BullMQ job results and options) before a span leaves the process.
 *
 * It lives beside, not inside, src/service/: the Redis and PostgreSQL clients are libraries
 * below the service, and they need this door too.
 */
import type { Telemetry } from "bullmq";
import type { FastifyPluginAsync } from "fastify";

export const TRACE_PROTOCOLS = ["http/protobuf", "http/json"] as const;
export type TraceProtocol = (typeof TRACE_PROTOCOLS)[number];

/** The standard OpenTelemetry variables receiptd honours, read in src/service/config.ts like every other setting. */
export interface TracingConfig {
  /** Where spans are POSTed: the traces endpoint itself, `/v1/traces` included. */
  tracesUrl: string;
  /** `OTEL_EXPORTER_OTLP_PROTOCOL` (or `…_TRACES_PROTOCOL`); gRPC is not offered. */
  protocol: TraceProtocol;
  /** `OTEL_SERVICE_NAME` (default `receiptd`): web processes and workers share it. */
  serviceName: string;
  /** `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`, percent-encoded values), on every span. */
  resourceAttributes: Record<string, string>;
}

/** The name of the Fastify plugin tracing registers (fastify-plugin `name`). */
export const TRACING_PLUGIN = "receiptd-tracing";

/** Attribute values a span may carry: never request content. */
export type SpanAttributes = Record<string, string | number | boolean>;

export type SpanKindName = "internal" | "client" | "producer" | "consumer";

/** A span started with `startSpan`, ended by its owner. */
export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed with the error's name (its message may quote content: not kept). */
  fail(error: unknown): void;
  end(): void;
}

/** Which receiptd program a process is: it is on every span's resource. */
export type TracedProcess = "web" | "worker";

export interface ActiveTracing {
  /** A span child of the active context, not made active itself (for work ended elsewhere). */
  startSpan(name: string, kind: SpanKindName, attributes: SpanAttributes): SpanHandle;
  /** Runs `work` inside a span made active for it, so that spans it starts are its children. */
  inSpan<T>(
    name: string,
    kind: SpanKindName,
    attributes: SpanAttributes,
    work: () => Promise<T>,
  ): Promise<T>;
  /**
   * The Fastify plugin: @fastify/otel's request spans (which accept a client's `traceparent`)
   * plus the `traceresponse` header. Registered first, so that it sees every route.
   */
  readonly fastifyPlugin: FastifyPluginAsync;
  /** The `telemetry` option of BullMQ's Queue and Worker (bullmq-otel, scrubbed). */
  readonly bullmqTelemetry: Telemetry;
  /** Exports what is still buffered, then stops; later spans are dropped. */
  shutdown(): Promise<void>;
}

/** The W3C Trace Context Level 2 response header naming the request's trace. */
export const TRACE_RESPONSE_HEADER = "traceresponse";

let active: ActiveTracing | null = null;
let starting: Promise<ActiveTracing | null> | null = null;

/** The process's tracing, or null when off (the default). */
export function activeTracing(): ActiveTracing | null {
  return active;
}

/**
 * Turns tracing on for this process when `config` says so (null: off, nothing is loaded).
 * Once per process: a second call returns the first one's tracing, whatever its config.
 */
export function startTracing(
  config: TracingConfig | null,
  process: TracedProcess,
): Promise<ActiveTracing | null> {
  if (config === null) return Promise.resolve(active);
  starting ??= import("./sdk.js").then(({ openTracing }) => {
    active = openTracing(config, process);
    return active;
  });
  return starting;
}

/** Flushes and stops the process's tracing, if any; it stays off afterwards. */
export async function stopTracing(): Promise<void> {
  const tracing = active;
  active = null;
  await tracing?.shutdown();
}

/** `work` inside a span when tracing is on; `work()` alone when off. */
export function traced<T>(
  name: string,
  kind: SpanKindName,
  attributes: SpanAttributes,
  work: () => Promise<T>,
): Promise<T> {
  const tracing = active;
  return tracing === null ? work() : tracing.inSpan(name, kind, attributes, work);
}
