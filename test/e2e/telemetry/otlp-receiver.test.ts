/**
 * Tollgate's traces as a real OTLP receiver gets them: an OpenTelemetry Collector (built once into
 * the cache by the global setup, scripts/lib/otel-collector.ts) receives Tollgate's production
 * export path (TOLLGATE_TRACING=otlp: batch processor, OTLP/HTTP exporter) and writes what it
 * decoded to a file this test reads back. It checks what the in-memory test (tracing.test.ts)
 * cannot: that the spans survive the wire with the caller's trace id, their kinds, the GenAI
 * attributes with their OTLP types (token counts and cost as integers), the resource's
 * service.name, and no deprecated `gen_ai.system`.
 */
import crypto from 'node:crypto';
import { startOtelCollector, type OtelCollector, type OtlpAnyValue, type ReceivedSpan } from '../../../scripts/lib/otel-collector';
import { freePort } from '../../../scripts/lib/temporal-dev-server';
import { startTracing, type Tracing } from '../../../src/telemetry/tracing';
import { say, startHarness, type Harness } from '../executions/helpers';

const SERVICE = 'tollgate-otlp-test';
const KIND = { server: 2, client: 3 } as const;
const STATUS_ERROR = 2;

/** An attribute's value with its OTLP type: integers arrive as decimal strings in OTLP JSON. */
const int = (n: number): OtlpAnyValue => ({ intValue: String(n) });
const str = (s: string): OtlpAnyValue => ({ stringValue: s });

describe('traces received by a real OTLP receiver (OpenTelemetry Collector)', () => {
  let collector: OtelCollector;
  let tracing: Tracing;
  let h: Harness;

  beforeAll(async () => {
    if (process.env.OTELCOL_UNAVAILABLE) throw new Error(process.env.OTELCOL_UNAVAILABLE);
    collector = await startOtelCollector({ bin: process.env.OTELCOL_PATH!, port: await freePort() });
    // The exporter reads the standard variables from the process, as in production (src/main.ts).
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.endpoint;
    process.env.OTEL_RESOURCE_ATTRIBUTES = 'deployment.environment.name=otlp-test,service.name=overridden';
    tracing = startTracing({ TOLLGATE_TRACING: 'otlp', OTEL_SERVICE_NAME: SERVICE })!;
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    await tracing?.shutdown();
    await collector?.stop();
  });

  /** A caller's W3C trace context with a trace id of its own. */
  function caller(): { traceId: string; spanId: string; traceparent: string } {
    const traceId = crypto.randomBytes(16).toString('hex');
    const spanId = crypto.randomBytes(8).toString('hex');
    return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
  }

  /**
   * The trace's spans once the receiver has `governed.call`, the server span and `record` (the
   * last to end): flushes the exporter and reads the receiver's output until they are there.
   */
  async function receivedTrace(traceId: string): Promise<ReceivedSpan[]> {
    for (;;) {
      await tracing.flush();
      const spans = collector.spans().filter((s) => s.traceId === traceId);
      const names = new Set(spans.map((s) => s.name));
      if (names.has('governed.call') && names.has('record') && spans.some((s) => s.kind === KIND.server)) return spans;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  const one = (spans: ReceivedSpan[], name: string): ReceivedSpan => {
    const found = spans.filter((s) => s.name === name);
    expect(found.map((s) => s.name)).toEqual([name]);
    return found[0];
  };

  function expectCommon(spans: ReceivedSpan[], c: { spanId: string }): { server: ReceivedSpan; call: ReceivedSpan; attempts: ReceivedSpan[] } {
    for (const s of spans) {
      expect(s.resource['service.name']).toBe(SERVICE);
      expect(s.resource).toMatchObject({ 'telemetry.sdk.language': 'nodejs', 'telemetry.sdk.name': 'opentelemetry', 'deployment.environment.name': 'otlp-test' });
      expect(s.scope).toBe('tollgate');
      expect(Object.keys(s.attributes)).not.toContain('gen_ai.system');
    }
    const servers = spans.filter((s) => s.kind === KIND.server);
    expect(servers).toHaveLength(1);
    expect(servers[0].parentSpanId).toBe(c.spanId);
    const call = one(spans, 'governed.call');
    expect(call.parentSpanId).toBe(servers[0].spanId);
    expect(one(spans, 'govern').parentSpanId).toBe(call.spanId);
    expect(one(spans, 'record').parentSpanId).toBe(call.spanId);
    // The executions path dispatches in a `dispatch` step; a proxy's attempts run in the governed call itself.
    const dispatcher = spans.find((s) => s.name === 'dispatch') ?? call;
    const attempts = spans.filter((s) => s.kind === KIND.client);
    for (const a of attempts) expect(a.parentSpanId).toBe(dispatcher.spanId);
    return { server: servers[0], call, attempts };
  }

  it('POST /v1/executions: the caller’s trace, governed call and provider attempt with the GenAI attributes and the envelope’s usage', async () => {
    const c = caller();
    const p = await h.project();
    const nonce = `otlp-${c.traceId}`;
    const res = await h.call('POST', '/v1/executions', {
      key: p.clientKey,
      headers: { traceparent: c.traceparent },
      body: { operation: 'generate.text', messages: say(`hello ${nonce}`) },
    });
    expect(res.status).toBe(200);
    const permitId = res.headers.get('x-svc-permit-id');
    expect(permitId).toEqual(expect.any(String));
    const { input_tokens, output_tokens, cost_usd_micros } = res.json.usage;
    expect(input_tokens).toBeGreaterThan(0);

    const spans = await receivedTrace(c.traceId);
    const { server, call, attempts } = expectCommon(spans, c);
    expect(server.name).toBe('POST /v1/executions');
    expect(one(spans, 'dispatch').parentSpanId).toBe(call.spanId);
    expect(server.attributes['http.response.status_code']).toEqual(int(200));
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': str('chat'),
      'gen_ai.provider.name': str('openai'),
      'gen_ai.request.model': str('gpt-4o-mini'),
      'gen_ai.response.model': { stringValue: expect.stringContaining('gpt-4o-mini') },
      'gen_ai.usage.input_tokens': int(input_tokens),
      'gen_ai.usage.output_tokens': int(output_tokens),
      'tollgate.permit_id': str(permitId!),
      'tollgate.decision': str('allow'),
      'tollgate.reason_code': { stringValue: expect.any(String) },
      'tollgate.cost_usd_micros': int(cost_usd_micros),
    });
    expect(call.attributes['error.type']).toBeUndefined();
    expect(call.status.code).not.toBe(STATUS_ERROR);

    expect(attempts).toHaveLength(1);
    const [attempt] = attempts;
    expect(attempt.name).toBe('chat gpt-4o-mini');
    expect(attempt.attributes).toMatchObject({
      'gen_ai.operation.name': str('chat'),
      'gen_ai.provider.name': str('openai'),
      'gen_ai.request.model': str('gpt-4o-mini'),
      'gen_ai.response.model': call.attributes['gen_ai.response.model'],
      'gen_ai.usage.input_tokens': int(input_tokens),
      'gen_ai.usage.output_tokens': int(output_tokens),
      'tollgate.attempt': int(1),
    });
    expect(one(spans, 'govern').attributes['tollgate.permit_id']).toEqual(str(permitId!));
    expect(one(spans, 'record').attributes['tollgate.cost_usd_micros']).toEqual(int(cost_usd_micros));

    // The provider got the attempt span's context, in the trace the receiver holds.
    const sent = h.emu.received().find((r) => JSON.stringify(r.body).includes(nonce));
    expect(sent?.traceparent).toBe(`00-${c.traceId}-${attempt.spanId}-01`);
  });

  it('the openai proxy: the caller’s trace, a CLIENT span per attempt, usage as the provider reported it', async () => {
    const c = caller();
    const p = await h.project();
    const nonce = `otlp-proxy-${c.traceId}`;
    const res = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', {
      key: p.clientKey,
      headers: { traceparent: c.traceparent },
      body: { model: 'gpt-4o-mini', messages: say(`hello ${nonce}`) },
    });
    expect(res.status).toBe(200);
    const permitId = res.headers.get('x-svc-permit-id');
    const { prompt_tokens, completion_tokens } = res.json.usage;

    const spans = await receivedTrace(c.traceId);
    const { server, call, attempts } = expectCommon(spans, c);
    expect(server.name).toBe('POST /v1/proxy/openai/:native_path');
    expect(attempts).toHaveLength(1);
    const [attempt] = attempts;
    expect(attempt.name).toBe('chat gpt-4o-mini');
    expect(attempt.attributes).toMatchObject({
      'gen_ai.operation.name': str('chat'),
      'gen_ai.provider.name': str('openai'),
      'gen_ai.request.model': str('gpt-4o-mini'),
      'gen_ai.response.model': str(res.json.model),
      'gen_ai.usage.input_tokens': int(prompt_tokens),
      'gen_ai.usage.output_tokens': int(completion_tokens),
    });
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': str('chat'),
      'gen_ai.provider.name': str('openai'),
      'gen_ai.request.model': str('gpt-4o-mini'),
      'gen_ai.usage.input_tokens': int(prompt_tokens),
      'gen_ai.usage.output_tokens': int(completion_tokens),
      'tollgate.permit_id': str(permitId!),
      'tollgate.decision': str('allow'),
    });
    expect(Number(call.attributes['tollgate.cost_usd_micros']?.intValue)).toBeGreaterThan(0);
    const sent = h.emu.received().find((r) => JSON.stringify(r.body).includes(nonce));
    expect(sent?.traceparent).toBe(`00-${c.traceId}-${attempt.spanId}-01`);
  });

  it('a failed provider call: error.type and status ERROR on the attempt and the governed call', async () => {
    const c = caller();
    const p = await h.project();
    const res = await h.call('POST', '/v1/executions', {
      key: p.clientKey,
      headers: { traceparent: c.traceparent },
      body: { operation: 'generate.text', messages: say('[[emulator:status=400]] broken'), routing: { provider: 'openai', model: 'gpt-4o-mini' } },
    });
    expect(res.json.status).toBe('failed');

    const spans = await receivedTrace(c.traceId);
    const { call, attempts } = expectCommon(spans, c);
    expect(attempts).toHaveLength(1);
    expect(attempts[0].attributes).toMatchObject({
      'gen_ai.operation.name': str('chat'),
      'gen_ai.provider.name': str('openai'),
      'gen_ai.request.model': str('gpt-4o-mini'),
      'error.type': str('400'),
    });
    expect(attempts[0].status.code).toBe(STATUS_ERROR);
    expect(call.attributes).toMatchObject({ 'tollgate.permit_id': str(res.headers.get('x-svc-permit-id')!), 'tollgate.decision': str('allow'), 'error.type': str('400') });
    expect(call.status.code).toBe(STATUS_ERROR);
  });
});
