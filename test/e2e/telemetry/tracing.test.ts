/**
 * OpenTelemetry traces (src/telemetry/tracing.ts, src/telemetry/gen-ai.ts), with an in-memory
 * exporter in place of OTLP: a governed call is one trace, child of the caller's traceparent, with a
 * `governed.call` span, a span per governance step, dispatch (one CLIENT span per provider attempt,
 * named by the GenAI conventions) and record, and the provider receives the attempt span's
 * traceparent. The GenAI attributes (never the deprecated `gen_ai.system`) on the execution route
 * and the native proxy, for a successful call and a failed one.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from '../../../src/telemetry/tracing';
import { patchPolicy, say, startHarness, type Harness } from '../executions/helpers';

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
  const clientSpans = (spans: ReadableSpan[]) => spans.filter((s) => s.kind === SpanKind.CLIENT);
  /** No span of the trace carries the deprecated attribute. */
  const noGenAiSystem = (spans: ReadableSpan[]) => expect(spans.filter((s) => 'gen_ai.system' in s.attributes).map((s) => s.name)).toEqual([]);

  it('POST /v1/executions: server span under the caller, the governed call, governance steps, dispatch, provider attempt, record', async () => {
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
    for (const name of ['governed.call', 'govern', 'governance.estimate', 'governance.decide', 'governance.permit', 'dispatch', 'chat gpt-4o-mini', 'record']) {
      expect(named(spans, name).length).toBeGreaterThanOrEqual(1);
    }
    const call = named(spans, 'governed.call')[0];
    expect(parentOf(call)).toBe(server[0].spanContext().spanId);
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': expect.stringContaining('gpt-4o-mini'),
      'tollgate.permit_id': res.headers.get('x-svc-permit-id'),
      'tollgate.decision': 'allow',
      'tollgate.reason_code': expect.any(String),
      'gen_ai.usage.input_tokens': res.json.usage.input_tokens,
      'gen_ai.usage.output_tokens': res.json.usage.output_tokens,
      'tollgate.cost_usd_micros': res.json.usage.cost_usd_micros,
    });
    expect(call.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(call.attributes['error.type']).toBeUndefined();
    const govern = named(spans, 'govern')[0];
    expect(parentOf(govern)).toBe(call.spanContext().spanId);
    expect(govern.attributes).toMatchObject({ 'tollgate.decision': 'allow', 'tollgate.permit_id': call.attributes['tollgate.permit_id'], 'gen_ai.provider.name': 'openai' });
    expect(parentOf(named(spans, 'governance.decide')[0])).toBe(govern.spanContext().spanId);
    const dispatch = named(spans, 'dispatch')[0];
    const attempts = clientSpans(spans);
    expect(attempts).toHaveLength(1);
    const providerCall = attempts[0];
    expect(providerCall.name).toBe('chat gpt-4o-mini');
    expect(parentOf(providerCall)).toBe(dispatch.spanContext().spanId);
    expect(providerCall.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': call.attributes['gen_ai.response.model'],
      'gen_ai.usage.input_tokens': res.json.usage.input_tokens,
      'gen_ai.usage.output_tokens': res.json.usage.output_tokens,
      'tollgate.attempt': 1,
    });
    expect(named(spans, 'record')[0].attributes['tollgate.cost_usd_micros']).toBe(res.json.usage.cost_usd_micros);
    noGenAiSystem(spans);

    const sent = h.emu.received().find((r) => JSON.stringify(r.body).includes(nonce));
    expect(sent?.traceparent).toBe(`00-${TRACE_ID}-${providerCall.spanContext().spanId}-01`);
  });

  it('the native proxy: a CLIENT span per attempt with the GenAI attributes, and the traceparent forwarded is ours, not the caller’s', async () => {
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
    const [providerCall] = clientSpans(spans);
    expect(providerCall.name).toBe('chat gpt-4o-mini');
    expect(providerCall.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': expect.stringContaining('gpt-4o-mini'),
      'gen_ai.usage.input_tokens': res.json.usage.prompt_tokens,
      'gen_ai.usage.output_tokens': res.json.usage.completion_tokens,
    });
    for (const name of ['govern', 'record']) expect(named(spans, name).length).toBeGreaterThanOrEqual(1);
    const call = named(spans, 'governed.call')[0];
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'tollgate.permit_id': res.headers.get('x-svc-permit-id'),
      'tollgate.decision': 'allow',
      'gen_ai.usage.input_tokens': res.json.usage.prompt_tokens,
      'tollgate.cost_usd_micros': expect.any(Number),
    });
    expect(call.attributes['tollgate.cost_usd_micros']).toBeGreaterThan(0);
    noGenAiSystem(spans);
    const sent = h.emu.received().find((r) => JSON.stringify(r.body).includes(nonce));
    expect(sent?.traceparent).toBe(`00-${TRACE_ID}-${providerCall.spanContext().spanId}-01`);
  });

  it('a failed provider call: error.type and error status on the attempt and the governed call (executions)', async () => {
    const p = await h.project();
    const res = await h.call('POST', '/v1/executions', {
      key: p.clientKey,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: { operation: 'generate.text', messages: say('[[emulator:status=400]] broken'), routing: { provider: 'openai', model: 'gpt-4o-mini' } },
    });
    expect(res.json.status).toBe('failed');
    const spans = spansOf(TRACE_ID);
    const [attempt] = clientSpans(spans);
    expect(attempt.name).toBe('chat gpt-4o-mini');
    expect(attempt.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'error.type': '400', 'tollgate.failure': 'http_error' });
    expect(attempt.status.code).toBe(SpanStatusCode.ERROR);
    const call = named(spans, 'governed.call')[0];
    expect(call.attributes).toMatchObject({ 'tollgate.decision': 'allow', 'error.type': '400' });
    expect(call.status.code).toBe(SpanStatusCode.ERROR);
    noGenAiSystem(spans);
  });

  it('a failed provider call through the native proxy: error.type on the attempt and the governed call', async () => {
    const p = await h.project();
    const res = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', {
      key: p.clientKey,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: { model: 'gpt-4o-mini', messages: say('[[emulator:status=429]] busy') },
    });
    expect(res.status).toBe(429);
    const spans = spansOf(TRACE_ID);
    const attempts = clientSpans(spans);
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    for (const a of attempts) {
      expect(a.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'error.type': 'rate_limited' });
      expect(a.attributes['gen_ai.usage.output_tokens']).toBeUndefined();
      expect(a.status.code).toBe(SpanStatusCode.ERROR);
    }
    const call = named(spans, 'governed.call')[0];
    expect(call.attributes).toMatchObject({ 'tollgate.permit_id': res.headers.get('x-svc-permit-id'), 'error.type': 'rate_limited' });
    noGenAiSystem(spans);
  });

  it('a denied call: the governed call span names the decision and reason code, no provider attempt', async () => {
    const p = await h.project();
    await patchPolicy(h, p, { allowed_models: ['anthropic/*'] });
    const res = await h.call('POST', '/v1/executions', {
      key: p.clientKey,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: { operation: 'generate.text', messages: say('hi'), routing: { provider: 'openai', model: 'gpt-4o-mini' } },
    });
    expect(res.json.status).toBe('denied');
    const spans = spansOf(TRACE_ID);
    expect(clientSpans(spans)).toEqual([]);
    const call = named(spans, 'governed.call')[0];
    expect(call.attributes).toMatchObject({ 'tollgate.decision': 'deny', 'tollgate.reason_code': expect.any(String), 'tollgate.cost_usd_micros': 0 });
    expect(call.attributes['error.type']).toBeUndefined();
  });

  it('a call without traceparent starts its own trace', async () => {
    const p = await h.project();
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('hi') } });
    expect(res.status).toBe(200);
    const server = exporter.getFinishedSpans().find((s) => s.name === 'POST /v1/executions');
    expect(server).toBeDefined();
    expect(server!.parentSpanContext).toBeUndefined();
    expect(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === server!.spanContext().traceId).map((s) => s.name)).toEqual(
      expect.arrayContaining(['governed.call', 'govern', 'dispatch', 'chat gpt-4o-mini', 'record']),
    );
  });
});
