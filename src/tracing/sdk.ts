/**
 * The OpenTelemetry SDK behind tracing.ts, loaded only by `startTracing` (a dynamic import)
 * when the configuration turns tracing on: a process with tracing off never reads this file.
 *
 * - One `NodeTracerProvider`, registered globally: bullmq-otel and @fastify/otel use the
 *   global API, and the AsyncLocalStorage context manager it installs carries the request's
 *   span through awaits into the Redis, PostgreSQL, CPU-pool and queue calls it makes.
 * - The W3C Trace Context propagator: a client's `traceparent` is honoured, and BullMQ carries
 *   the context in the job's options to the worker process, which continues the same trace.
 * - Export over OTLP/HTTP, protobuf or JSON, in batches (the SDK's `OTEL_BSP_*` settings).
 * - No require hooks: @fastify/otel is registered as a plugin, and the Redis and PostgreSQL
 *   spans come from receiptd's own wrappers (one place each), not from patched modules.
 */
import { randomUUID } from "node:crypto";
import { FastifyOtelInstrumentation } from "@fastify/otel";
import {
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  type ReadableSpan,
  type Span as SdkSpan,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-node";
import { BullMQOtel } from "bullmq-otel";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import {
  type ActiveTracing,
  type SpanAttributes,
  type SpanHandle,
  type SpanKindName,
  TRACE_RESPONSE_HEADER,
  TRACING_PLUGIN,
  type TracedProcess,
  type TracingConfig,
} from "./tracing.js";

const KINDS: Record<SpanKindName, SpanKind> = {
  internal: SpanKind.INTERNAL,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

/** The name spans of receiptd's own wrappers are recorded under. */
const TRACER_NAME = "receiptd";

/**
 * Attributes the libraries set that may hold content: BullMQ's job result (a stored document),
 * progress and options, a query string. Dropped before export, whatever set them.
 */
const CONTENT_ATTRIBUTES = new Set([
  "bullmq.job.result",
  "bullmq.job.progress",
  "bullmq.job.options",
  "bullmq.queue.options",
  "bullmq.worker.options",
  "url.query",
  "url.full",
  "http.request.body",
  "http.response.body",
]);

/** `/v1/x?digest=…` → `/v1/x`: the route and path are kept, never the query. */
export function pathOnly(url: string): string {
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

/**
 * Drops content-bearing attributes (and query strings) from every span as it ends, before the
 * batch processor queues it for export: the one place the rule of the logs holds for spans
 * whatever library made them.
 */
export class ContentScrubber implements SpanProcessor {
  constructor(readonly next: SpanProcessor) {}

  onStart(span: SdkSpan, parent: Context): void {
    this.next.onStart(span, parent);
  }

  onEnd(span: ReadableSpan): void {
    scrubAttributes(span.attributes as Record<string, unknown>);
    for (const event of span.events) {
      if (event.attributes !== undefined)
        scrubAttributes(event.attributes as Record<string, unknown>);
    }
    this.next.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}

function scrubAttributes(attributes: Record<string, unknown>): void {
  for (const key of Object.keys(attributes)) {
    if (CONTENT_ATTRIBUTES.has(key)) delete attributes[key];
  }
  const path = attributes["url.path"];
  if (typeof path === "string") attributes["url.path"] = pathOnly(path);
  // An exception's message may quote what failed to parse; its type says enough.
  delete attributes["exception.message"];
  delete attributes["exception.stacktrace"];
}

function exporterFor(config: TracingConfig) {
  const options = { url: config.tracesUrl };
  return config.protocol === "http/json"
    ? new JsonTraceExporter(options)
    : new ProtobufTraceExporter(options);
}

/** `00-<trace id>-<span id>-<flags>`: W3C Trace Context Level 2's `traceresponse`. */
function traceResponse(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, "0")}`;
}

function handleOf(span: Span): SpanHandle {
  return {
    setAttributes: (attributes) => span.setAttributes(attributes),
    fail: (error) => failSpan(span, error),
    end: () => span.end(),
  };
}

/** The error's name only: its message may quote content (the logs keep the codes too). */
function failSpan(span: Span, error: unknown): void {
  const name = error instanceof Error ? error.name : typeof error;
  const code =
    typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
      ? error.code
      : undefined;
  span.setAttribute("error.type", code ?? name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? name });
}

export function openTracing(config: TracingConfig, process: TracedProcess): ActiveTracing {
  const resource = resourceFromAttributes({
    ...config.resourceAttributes,
    "service.name": config.serviceName,
    "service.instance.id": randomUUID(),
    "process.pid": globalThis.process.pid,
    "process.runtime.name": "nodejs",
    "process.runtime.version": globalThis.process.versions.node,
    "receiptd.process": process,
  });
  const provider = new NodeTracerProvider({
    resource,
    // The sampler is the SDK's choice from OTEL_TRACES_SAMPLER (default: parent-based, always
    // on), so a client's sampled flag is followed.
    spanProcessors: [new ContentScrubber(new BatchSpanProcessor(exporterFor(config)))],
  });
  provider.register();
  const tracer = provider.getTracer(TRACER_NAME);

  const instrumentation = new FastifyOtelInstrumentation({
    // One span per request and one for its handler: a span per hook would cost more than the
    // hooks themselves, and tell little the request span does not.
    instrumentHooks: false,
    // An exception's message may quote the request; the span keeps the status and the route.
    recordExceptions: false,
    requestHook: (span, request) => {
      span.setAttribute("url.path", pathOnly(request.url));
    },
  });
  instrumentation.setTracerProvider(provider);

  const plugin = fastifyPlugin(
    async (app: FastifyInstance) => {
      await app.register(instrumentation.plugin());
      // After @fastify/otel's own onRequest hook, which started the request's span (from the
      // client's `traceparent` when it sent one). Set now, so error answers carry it too.
      app.addHook("onRequest", (request: FastifyRequest, reply: FastifyReply, done) => {
        const { span } = request.opentelemetry();
        if (span != null) reply.header(TRACE_RESPONSE_HEADER, traceResponse(span));
        done();
      });
    },
    { name: TRACING_PLUGIN },
  );

  return {
    startSpan(name: string, kind: SpanKindName, attributes: SpanAttributes): SpanHandle {
      return handleOf(tracer.startSpan(name, { kind: KINDS[kind], attributes }, context.active()));
    },
    inSpan<T>(
      name: string,
      kind: SpanKindName,
      attributes: SpanAttributes,
      work: () => Promise<T>,
    ): Promise<T> {
      return tracer.startActiveSpan(name, { kind: KINDS[kind], attributes }, async (span) => {
        try {
          return await work();
        } catch (error) {
          failSpan(span, error);
          throw error;
        } finally {
          span.end();
        }
      });
    },
    fastifyPlugin: plugin,
    bullmqTelemetry: new BullMQOtel({ tracerName: "bullmq" }),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}
