/**
 * OpenTelemetry traces (src/telemetry/tracing.ts), with an in-memory exporter in place of OTLP: a
 * governed call is one trace, child of the caller's traceparent, with a span per governance step,
 * dispatch (one span per provider attempt) and record, and the provider receives the provider-call
 * span's traceparent. Both the execution route and the native proxy.
 */
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from '../../../src/telemetry/tracing';
import { say, startHarness, type Harness } from '../executions/helpers';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

describe('OpenTelemetry traces of governed calls', () => {
  let h: Harness;
  let tracing: Tracing;
  const exporter = new InMemorySpanExporter();
  beforeAll(async () => {
    tracing = startTracing({}, { exporter })!;
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    await tracing?.shutdown();
  });
  beforeEach(() => exporter.reset());

  const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
  const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
  const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

  it('POST /v1/executions: server span under the caller, governance steps, dispatch, provider call, record', async () => {
    const p = await h.project();
    const nonce = `trace-${Date.now()}`;
    const res = await h.call('POST', '/v1/executions', {
      key: p.clientKey,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: { operation: 'generate.text', messages: say(`hello ${nonce}`) },
    });
    expect(res.status).toBe(200);
    const spans = spansOf(TRACE_ID);
    const server = named(spans, 'POST /v1/executions');
    expect(server).toHaveLength(1);
    expect(parentOf(server[0])).toBe(CALLER_SPAN);
    expect(server[0].attributes['http.response.status_code']).toBe(200);
    for (const name of ['govern', 'governance.estimate', 'governance.decide', 'governance.permit', 'dispatch', 'provider.call', 'record']) {
      expect(named(spans, name).length).toBeGreaterThanOrEqual(1);
    }
    const govern = named(spans, 'govern')[0];
    expect(govern.attributes['tollgate.decision']).toBe('allow');
    expect(parentOf(named(spans, 'governance.decide')[0])).toBe(govern.spanContext().spanId);
    const dispatch = named(spans, 'dispatch')[0];
    const providerCall = named(spans, 'provider.call')[0];
    expect(parentOf(providerCall)).toBe(dispatch.spanContext().spanId);
    expect(providerCall.attributes['gen_ai.system']).toBe('openai');

    const sent = h.emu.received().find((r) => JSON.stringify(r.body).includes(nonce));
    expect(sent?.traceparent).toBe(`00-${TRACE_ID}-${providerCall.spanContext().spanId}-01`);
  });

  it('the native proxy: provider.call per attempt and the traceparent forwarded is ours, not the caller’s', async () => {
    const p = await h.project();
    const nonce = `trace-proxy-${Date.now()}`;
    const res = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', {
      key: p.clientKey,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: { model: 'gpt-4o-mini', messages: say(`hello ${nonce}`) },
    });
    expect(res.status).toBe(200);
    const spans = spansOf(TRACE_ID);
    const server = spans.filter((s) => s.kind === SpanKind.SERVER);
    expect(server.map((s) => s.name)).toEqual(['POST /v1/proxy/openai/:native_path']);
    expect(parentOf(server[0])).toBe(CALLER_SPAN);
    const providerCall = named(spans, 'provider.call')[0];
    expect(providerCall).toBeDefined();
    for (const name of ['govern', 'record']) expect(named(spans, name).length).toBeGreaterThanOrEqual(1);
    const sent = h.emu.received().find((r) => JSON.stringify(r.body).includes(nonce));
    expect(sent?.traceparent).toBe(`00-${TRACE_ID}-${providerCall.spanContext().spanId}-01`);
  });

  it('a call without traceparent starts its own trace', async () => {
    const p = await h.project();
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('hi') } });
    expect(res.status).toBe(200);
    const server = exporter.getFinishedSpans().find((s) => s.name === 'POST /v1/executions');
    expect(server).toBeDefined();
    expect(server!.parentSpanContext).toBeUndefined();
    expect(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === server!.spanContext().traceId).map((s) => s.name)).toEqual(
      expect.arrayContaining(['govern', 'dispatch', 'provider.call', 'record']),
    );
  });
});
