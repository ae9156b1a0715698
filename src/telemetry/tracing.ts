/**
 * OpenTelemetry traces, off by default. `TOLLGATE_TRACING=otlp` (or the standard
 * `OTEL_TRACES_EXPORTER=otlp`) exports spans over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT`
 * (default http://localhost:4318), service name `OTEL_SERVICE_NAME` (default tollgate), further resource
 * attributes from `OTEL_RESOURCE_ATTRIBUTES`.
 *
 * Spans: one server span per HTTP request (parent: the caller's `traceparent`), and inside it one
 * `governed.call` with `govern` (with `governance.estimate`, `governance.firewall`,
 * `governance.decide`, `governance.permit`), `dispatch` (one CLIENT span per provider attempt, named
 * `{gen_ai.operation.name} {gen_ai.request.model}`, whose W3C `traceparent` goes to the provider)
 * and `record`. The GenAI semantic-convention attributes are built in gen-ai.ts. While tracing is
 * off, each of these is a function call and nothing else; no exporter, no context manager is
 * installed.
 */
import { context, INVALID_SPAN_CONTEXT, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';

const tracer = trace.getTracer('tollgate');

/**
 * Whether a tracer provider is installed. While none is, a span helper calls its function with one
 * shared non-recording span: the API's no-op tracer would still build a context per span, and a
 * governed call runs about eight of them.
 */
let tracingOn = false;
const OFF_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** True while spans are recorded and exported (startTracing ran, shutdown did not). */
export function tracingActive(): boolean {
  return tracingOn;
}

export interface Tracing {
  /** Exports every span ended so far (the batch processor otherwise waits up to its delay). */
  flush(): Promise<void>;
  /** Flushes buffered spans and stops exporting. */
  shutdown(): Promise<void>;
}

export function tracingEnabled(env: NodeJS.ProcessEnv): boolean {
  return env.TOLLGATE_TRACING === 'otlp' || env.OTEL_TRACES_EXPORTER === 'otlp';
}

/**
 * Installs the global tracer provider (with the AsyncLocalStorage context manager and the W3C
 * propagator) when tracing is enabled, or when an exporter is given (tests); otherwise null.
 */
export function startTracing(env: NodeJS.ProcessEnv, opts: { exporter?: SpanExporter } = {}): Tracing | null {
  if (!opts.exporter && !tracingEnabled(env)) return null;
  // Loaded only when tracing is on: the SDK and the OTLP exporter are ~1.5 MB of modules a process
  // with tracing off would otherwise hold (docs/decisions/lazy-modules.md).
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const exporter = opts.exporter ?? new OTLPTraceExporter();
  // A resource given to the provider replaces the SDK's default one, so it is built on it: the
  // telemetry.sdk.* attributes a receiver expects, then OTEL_RESOURCE_ATTRIBUTES (read from the
  // process, as the exporter reads its variables), then the service name, OTEL_SERVICE_NAME first.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'tollgate' }))
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(env.OTEL_SERVICE_NAME ? resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME }) : null);
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [opts.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  provider.register();
  tracingOn = true;
  return {
    flush: () => provider.forceFlush(),
    async shutdown() {
      tracingOn = false;
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/**
 * Runs `fn` in a child span of the active one (kind INTERNAL unless given); an exception marks the
 * span failed, with `error.type` its class name as the semantic conventions ask, and is rethrown.
 */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, opts: { kind?: SpanKind } = {}): Promise<T> {
  if (!tracingOn) return fn(OFF_SPAN);
  return tracer.startActiveSpan(name, { attributes, ...(opts.kind !== undefined ? { kind: opts.kind } : {}) }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function failSpan(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setAttribute('error.type', err instanceof Error ? err.name : '_OTHER');
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** `inSpan` for synchronous steps. */
export function inSpanSync<T>(name: string, attributes: Attributes, fn: (span: Span) => T): T {
  if (!tracingOn) return fn(OFF_SPAN);
  return tracer.startActiveSpan(name, { attributes }, (span) => {
    try {
      return fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The server span of one HTTP request, child of the caller's W3C trace context when it sent one. */
export function startServerSpan(name: string, headers: Record<string, string | string[] | undefined>, attributes: Attributes): { span: Span; ctx: Context } {
  if (!tracingOn) return { span: OFF_SPAN, ctx: context.active() };
  const parent = propagation.extract(context.active(), headers);
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return { span, ctx: trace.setSpan(parent, span) };
}

/** Adds `traceparent` (and `tracestate`) of the active span to outgoing provider headers. */
export function injectTraceContext(headers: Record<string, string>): void {
  propagation.inject(context.active(), headers);
}

