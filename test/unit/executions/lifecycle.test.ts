import { derivedEventId, derivedEventRef, inFlightEvents, permitEventRows, recordEvents } from '../../../src/executions/lifecycle-events';
import { lifecycleOf, type DispatchRun, type DispatchStart, type Lifecycle, type PermitColumns, type RecordColumns } from '../../../src/executions/lifecycle';
import { recordLeafEvent } from '../../../src/executions/record-leaf';
import { buildEnvelope, envelopeOfRow, storedEnvelope } from '../../../src/executions/envelope';

const permit: PermitColumns = {
  id: 'pmt_1',
  project_id: 'prj_1',
  request_id: 'exec_req_1',
  route: 'executions',
  operation: 'chat',
  provider: 'openai',
  model: 'gpt-4o-mini',
  workflow_id: null,
  decision: 'allow',
  reason_code: 'policy.active_policy_candidate',
  display_reason: 'Allowed by the active project policy',
  reserved_cost_micros: '1200',
  issued_at: new Date('2026-01-01T00:00:00.010Z'),
  expires_at: new Date('2026-01-01T00:10:00.010Z'),
  metadata: {},
};

const dispatch: DispatchStart = {
  at: '2026-01-01T00:00:00.005Z',
  primary: { provider: 'openai', model: 'gpt-4o-mini' },
  routing: { reason_code: 'explicit_request', requested_provider: 'openai', requested_model: 'gpt-4o-mini', route: 'proxy:openai' },
  started: { operation: 'chat', mode: 'sync', native_path: '/v1/chat/completions' },
  stream: false,
};

const CREATED = '2026-01-01T00:00:00.000Z';
type Attempt = DispatchRun['attempts'][number];
type End = DispatchRun['end'];
const ok = (provider = 'openai', model = 'gpt-4o-mini', sentAt = dispatch.at, receivedAt = '2026-01-01T00:00:00.250Z'): Attempt => ({ provider, model, sentAt, receivedAt, status: 200 });

function lifecycle(attempts: Attempt[], end: End, envelopeReason = 'explicit_request'): Lifecycle {
  return lifecycleOf(CREATED, dispatch, { attempts, end, envelopeReason });
}

function record(lifecycle: Lifecycle, over: Partial<RecordColumns> = {}): RecordColumns {
  return {
    id: 'exec_req_1',
    project_id: 'prj_1',
    seq: '6400',
    permit_id: 'pmt_1',
    job_id: null,
    operation: 'chat',
    mode: 'sync',
    created_at: new Date(CREATED),
    envelope: { routing: { requested_provider: 'openai', requested_model: 'gpt-4o-mini', reason_code: 'explicit_request', fallback_occurred: false } },
    status: 'completed',
    status_code: 200,
    provider: 'openai',
    model: 'gpt-4o-mini',
    input_tokens: 10,
    output_tokens: 5,
    cost_usd_micros: '42',
    estimated_final: false,
    error_code: null,
    completed_at: new Date('2026-01-01T00:00:00.300Z'),
    lifecycle,
    ...over,
  };
}

describe('call lifecycle events derived from the record', () => {
  it('rebuilds a completed call: the permit decision, the dispatch, the response, usage and completion, in seq order', () => {
    const events = recordEvents(
      record(lifecycle([ok()], { kind: 'ok', finishReason: 'stop' })),
      permit,
      7,
    );
    expect(events.map((e) => e.event_type)).toEqual([
      'permit.allowed', 'permit.expiry_scheduled', 'routing.selected_model', 'execution.started', 'provider.request_sent',
      'provider.response_received', 'usage.recorded', 'request.completed',
    ]);
    expect(events.map((e) => e.seq)).toEqual([6401, 6402, 6403, 6404, 6405, 6406, 6407, 6408]);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => derivedEventId('exec_req_1', i + 1)));
    expect(events.every((e) => e.chain_pos === 7 && e.request_id === 'exec_req_1' && e.permit_id === 'pmt_1')).toBe(true);
    expect(events[0]).toMatchObject({ source: 'permits', phase: 'permit', timestamp: new Date('2026-01-01T00:00:00.010Z') });
    expect(events[0].metadata).toEqual({
      decision: 'allow', reason: 'Allowed by the active project policy', reason_code: 'policy.active_policy_candidate', route: 'executions',
      operation: 'chat', workflow_id: null, reserved_cost_usd_micros: 1200,
    });
    expect(events[1].metadata).toEqual({ expires_at: '2026-01-01T00:10:00.010Z' });
    expect(events[2]).toMatchObject({ source: 'execution_events', phase: 'routing', timestamp: new Date(dispatch.at) });
    expect(events[2].metadata).toEqual(dispatch.routing);
    expect(events[3].metadata).toEqual(dispatch.started);
    expect(events[4].metadata).toEqual({ attempt: 1, stream: false });
    expect(events[5]).toMatchObject({ timestamp: new Date('2026-01-01T00:00:00.250Z'), metadata: { ok: true, status: 200, attempt: 1, finish_reason: 'stop' } });
    expect(events[6].metadata).toEqual({ input_tokens: 10, output_tokens: 5, total_tokens: 15, cost_usd_micros: 42, estimated_final: false });
    // What the record keeps beyond its columns is small: no key per attempt, instants as offsets.
    expect(JSON.stringify(record(lifecycle([ok()], { kind: 'ok', finishReason: 'stop' })).lifecycle).length).toBeLessThan(200);
    expect(events[7]).toMatchObject({ phase: 'completion', metadata: { status_code: 200 }, timestamp: new Date('2026-01-01T00:00:00.300Z') });
  });

  it('a proxied tool call: the permit event names the tools offered, the response the calls made (names only); none kept when there are none', () => {
    const l = lifecycle([ok()], { kind: 'ok', finishReason: 'tool_calls', toolCalls: ['get_weather', 'get_weather'] });
    expect(l).toMatchObject({ end: 'ok', finish_reason: 'tool_calls', tool_calls: ['get_weather', 'get_weather'] });
    const events = recordEvents(record(l), { ...permit, route: 'proxy:openai', metadata: { tools: ['get_time', 'get_weather'] } });
    expect(events[0].metadata).toMatchObject({ route: 'proxy:openai', tools: ['get_time', 'get_weather'] });
    expect(events[5].metadata).toEqual({ ok: true, status: 200, attempt: 1, finish_reason: 'tool_calls', tool_calls: ['get_weather', 'get_weather'] });
    expect(lifecycle([ok()], { kind: 'ok', finishReason: 'stop', toolCalls: [] })).not.toHaveProperty('tool_calls');
  });

  it('rebuilds fallback tries from the attempts: the failed response, fallback.triggered, the next target and its request', () => {
    const events = recordEvents(
      record(
        lifecycle(
          [
            { provider: 'openai', model: 'gpt-4o-mini', sentAt: dispatch.at, receivedAt: '2026-01-01T00:00:00.100Z', status: 503, failureKind: 'overloaded' },
            ok('anthropic', 'claude-haiku', '2026-01-01T00:00:00.101Z', '2026-01-01T00:00:00.200Z'),
          ],
          { kind: 'ok', finishReason: 'stop' },
          'explicit_fallback',
        ),
        { provider: 'anthropic', model: 'claude-haiku', envelope: { routing: { requested_provider: 'openai', requested_model: 'gpt-4o-mini', reason_code: 'explicit_fallback', fallback_occurred: true } } },
      ),
      permit,
    );
    // The first target's routing reason, not the envelope's explicit_fallback.
    expect(events[2].metadata).toEqual(dispatch.routing);
    const tail = events.slice(5);
    expect(tail.map((e) => e.event_type)).toEqual([
      'provider.response_received', 'fallback.triggered', 'fallback.selected_model', 'provider.request_sent',
      'provider.response_received', 'usage.recorded', 'request.completed',
    ]);
    expect(tail[0]).toMatchObject({ provider: 'openai', metadata: { ok: false, status: 503, failure_kind: 'overloaded', attempt: 1 } });
    expect(tail[1]).toMatchObject({ provider: 'openai', metadata: { failure_kind: 'overloaded', status: 503, next_provider: 'anthropic', next_model: 'claude-haiku' } });
    expect(tail[2]).toMatchObject({ provider: 'anthropic', metadata: { position: 1 } });
    expect(tail[3]).toMatchObject({ provider: 'anthropic', metadata: { attempt: 2, stream: false } });
    expect(tail[4]).toMatchObject({ provider: 'anthropic', metadata: { ok: true, attempt: 2 } });
  });

  it('rebuilds an interrupted call as request.errored with the interrupted response', () => {
    const events = recordEvents(
      record(lifecycle([], { kind: 'interrupted' }), { status: 'failed', status_code: 502, error_code: 'dispatch_interrupted', output_tokens: 0 }),
      permit,
    );
    expect(events[4]).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(events.slice(5).map((e) => [e.event_type, e.metadata])).toEqual([
      ['provider.response_received', { ok: false, failure_kind: 'interrupted' }],
      ['usage.recorded', { input_tokens: 10, output_tokens: 0, total_tokens: 10, cost_usd_micros: 42, estimated_final: false }],
      ['request.errored', { status_code: 502, error_code: 'dispatch_interrupted' }],
    ]);
  });

  it("rebuilds a job's retried attempts as its dispatch activity wrote them: the retried response, then the next attempt's request", () => {
    const failed = (sentAt: string, receivedAt: string): Attempt => ({ provider: 'openai', model: 'gpt-4o-mini', sentAt, receivedAt, status: 429, failureKind: 'rate_limited' });
    const l = lifecycleOf(
      CREATED,
      dispatch,
      {
        attempts: [failed(dispatch.at, '2026-01-01T00:00:00.020Z'), ok('openai', 'gpt-4o-mini', '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:01.100Z')],
        end: { kind: 'ok', finishReason: 'stop' },
        envelopeReason: 'explicit_request',
        jobAttempts: [{ attempt: 1, at: dispatch.at, priorTries: 0 }, { attempt: 2, at: '2026-01-01T00:00:00.999Z', priorTries: 1 }],
      },
    );
    expect(l.job_attempts).toEqual([[2, 999, 1]]);
    const tail = recordEvents(record(l, { completed_at: new Date('2026-01-01T00:00:01.200Z') }), permit).slice(5);
    expect(tail.map((e) => [e.event_type, e.timestamp.toISOString(), e.metadata])).toEqual([
      ['provider.response_received', '2026-01-01T00:00:00.020Z', { ok: false, status: 429, failure_kind: 'rate_limited', attempt: 1, job_attempt: 1, retried: true }],
      ['provider.request_sent', '2026-01-01T00:00:00.999Z', { attempt: 2, stream: false, job_attempt: 2 }],
      ['provider.response_received', '2026-01-01T00:00:01.100Z', { ok: true, status: 200, attempt: 2, finish_reason: 'stop' }],
      ['usage.recorded', '2026-01-01T00:00:01.200Z', expect.any(Object)],
      ['request.completed', '2026-01-01T00:00:01.200Z', { status_code: 200 }],
    ]);
  });

  it("rebuilds a job interrupted after a retried try and a lost attempt: the retried response, the lost attempt's request, the interrupted response", () => {
    const l = lifecycleOf(
      CREATED,
      dispatch,
      {
        attempts: [{ provider: 'openai', model: 'gpt-4o-mini', sentAt: dispatch.at, receivedAt: '2026-01-01T00:00:00.020Z', status: 500, failureKind: 'upstream' }],
        end: { kind: 'interrupted' },
        envelopeReason: 'explicit_request',
        jobAttempts: [{ attempt: 1, at: dispatch.at, priorTries: 0 }, { attempt: 2, at: '2026-01-01T00:00:00.500Z', priorTries: 1 }],
      },
    );
    const events = recordEvents(record(l, { status: 'failed', status_code: 502, error_code: 'dispatch_interrupted', output_tokens: 0 }), permit);
    expect(events.map((e) => e.event_type)).toEqual([
      'permit.allowed', 'permit.expiry_scheduled', 'routing.selected_model', 'execution.started', 'provider.request_sent',
      'provider.response_received', 'provider.request_sent', 'provider.response_received', 'usage.recorded', 'request.errored',
    ]);
    expect(events[5].metadata).toMatchObject({ retried: true, job_attempt: 1, attempt: 1 });
    expect(events[6].metadata).toEqual({ attempt: 2, stream: false, job_attempt: 2 });
    expect(events[7].metadata).toEqual({ ok: false, failure_kind: 'interrupted' });
    // Cancelled while waiting to retry: the retried response, then the interrupted one.
    const waiting = lifecycleOf(CREATED, dispatch, { attempts: l.attempts.map(([provider, model]) => ({ provider, model, sentAt: dispatch.at, receivedAt: '2026-01-01T00:00:00.020Z', status: 500, failureKind: 'upstream' })), end: { kind: 'interrupted' }, envelopeReason: 'explicit_request', jobAttempts: [{ attempt: 1, at: dispatch.at, priorTries: 0 }] });
    expect(waiting.job_attempts).toEqual([]);
    const types = recordEvents(record(waiting, { status: 'failed', status_code: 502, error_code: 'dispatch_interrupted' }), permit).slice(5).map((e) => [e.event_type, e.metadata.retried ?? e.metadata.failure_kind]);
    expect(types.slice(0, 2)).toEqual([['provider.response_received', true], ['provider.response_received', 'interrupted']]);
  });

  it('stores as rows the permit events a record would derive, for an allow recorded without a lifecycle', () => {
    const derived = recordEvents(record(lifecycle([ok()], { kind: 'ok', finishReason: 'stop' })), permit).filter((e) => e.derived_from === 'permit');
    const rows = permitEventRows(permit);
    expect(rows.map((r) => [r.eventType, r.source, r.phase, r.provider, r.model, r.permitId, r.requestId, r.timestamp, r.metadata])).toEqual(
      derived.map((e) => [e.event_type, e.source, e.phase, e.provider, e.model, e.permit_id, e.request_id, e.timestamp, e.metadata]),
    );
  });

  it("derives a session turn's usage and end only: its permit's events are the session's rows, and no dispatch was Tollgate's", () => {
    const turn = { ...record(null as unknown as Lifecycle, { lifecycle: { turn: 3 }, session_id: 'sess_1', mode: 'stream' }) };
    const events = recordEvents(turn, permit, 9);
    expect(events.map((e) => e.event_type)).toEqual(['usage.recorded', 'request.completed']);
    expect(events.map((e) => e.seq)).toEqual([6401, 6402]);
    expect(events.every((e) => e.session_id === 'sess_1' && e.request_id === 'exec_req_1' && e.permit_id === 'pmt_1' && e.chain_pos === 9 && e.derived_from === 'record')).toBe(true);
    expect(events[0]).toMatchObject({ source: 'execution_events', phase: 'usage', timestamp: new Date('2026-01-01T00:00:00.300Z') });
    expect(events[0].metadata).toEqual({ input_tokens: 10, output_tokens: 5, total_tokens: 15, cost_usd_micros: 42, estimated_final: false });
    // Closed with its session unsettled: no usage was reported, so none is shown.
    const closed = recordEvents({ ...turn, status: 'failed', status_code: 502, error_code: 'usage_not_reported', input_tokens: 0, output_tokens: 0, cost_usd_micros: 0 }, permit);
    expect(closed.map((e) => [e.event_type, e.metadata])).toEqual([['request.errored', { status_code: 502, error_code: 'usage_not_reported' }]]);
  });

  it('derives nothing from a record whose events are stored rows', () => {
    expect(recordEvents(record(null as unknown as Lifecycle, { lifecycle: null }), permit)).toEqual([]);
  });

  it('gives a call in flight its decision and first try from the permit alone', () => {
    const events = inFlightEvents({ ...permit, closing: { input: { executionId: 'exec_req_1' }, dispatch } });
    expect(events.map((e) => e.event_type)).toEqual(['permit.allowed', 'permit.expiry_scheduled', 'routing.selected_model', 'execution.started', 'provider.request_sent']);
    expect(events.every((e) => e.seq === null && e.request_id === 'exec_req_1')).toBe(true);
    expect(inFlightEvents({ ...permit, closing: null })).toEqual([]);
  });

  it('reads a derived id back, and not a stored event id', () => {
    expect(derivedEventRef(derivedEventId('exec_req_0192f3', 12))).toEqual({ executionId: 'exec_req_0192f3', n: 12 });
    expect(derivedEventRef('evt_0192f3aa')).toBeNull();
  });

  it('makes the record one event-shaped leaf whose metadata changes with any column or the permit decision', () => {
    const row = { ...record(lifecycle([], { kind: 'interrupted' })), recorded_at: new Date() };
    const leaf = recordLeafEvent(row, permit);
    expect(leaf).toMatchObject({ event_type: 'call.recorded', id: 'exec_req_1', seq: 6400, request_id: 'exec_req_1', permit_id: 'pmt_1' });
    const record0 = (leaf.metadata as { record: Record<string, unknown> }).record;
    expect(record0.cost_usd_micros).toBe(42);
    expect(record0).not.toHaveProperty('recorded_at');
    // The intent column keeps the member name records were first chained under.
    const withIntent = (recordLeafEvent({ ...row, intent_id: 'run-1' }, permit).metadata as { record: Record<string, unknown> }).record;
    expect(withIntent.workflow_intent_id).toBe('run-1');
    expect(withIntent).not.toHaveProperty('intent_id');
    expect(recordLeafEvent({ ...row, cost_usd_micros: '43' }, permit).metadata).not.toEqual(leaf.metadata);
    expect(recordLeafEvent({ ...row, lifecycle: { ...row.lifecycle!, dispatched_ms: 6 } }, permit).metadata).not.toEqual(leaf.metadata);
    expect(recordLeafEvent(row, { ...permit, reason_code: 'edited' }).metadata).not.toEqual(leaf.metadata);
  });
});

describe('the stored envelope', () => {
  it('rebuilds the whole envelope, member for member, from the stored part and the columns', () => {
    const env = buildEnvelope({
      id: 'exec_req_1', route: 'executions', createdAt: '2026-01-01T00:00:00.000Z', completedAt: '2026-01-01T00:00:00.300Z', status: 'failed', statusCode: 502,
      output: null, outputAssets: [],
      routing: { requested_provider: 'openai', requested_model: null, selected_provider: 'anthropic', selected_model: 'claude-haiku', reason_code: 'explicit_fallback', fallback_occurred: true },
      governance: { decision: 'allow', reason: 'policy.active_policy_candidate', actions: [{ type: 'log', message: 'x' }], constraints: null, budgets: null },
      usage: { input_tokens: 3, output_tokens: 1, total_tokens: 9, estimated: true, metrics: [] }, costMicros: 7,
      error: { code: 'upstream_error', message: 'boom' },
    });
    const row = {
      id: env.id, route: 'executions', status: env.status, status_code: env.status_code, provider: 'anthropic', model: 'claude-haiku', input_tokens: 3, output_tokens: 1,
      cost_usd_micros: '7', estimated_final: true, error_code: 'upstream_error', created_at: new Date(env.created_at), completed_at: new Date(env.timing.completed_at),
      duration_ms: env.timing.duration_ms, envelope: JSON.parse(JSON.stringify(storedEnvelope(env))),
    };
    expect(JSON.stringify(envelopeOfRow(row))).toBe(JSON.stringify(env));
    expect(JSON.stringify(row.envelope).length).toBeLessThan(JSON.stringify(env).length / 2);
    // A plain allow's action and the token meters are not stored, and come back.
    const plain = { ...env, status: 'completed' as const, status_code: 200, error: null, governance: { ...env.governance, actions: [{ type: 'proceed', message: 'The request may proceed' }] },
      usage: { ...env.usage, total_tokens: 4, metrics: [{ meter: 'input_tokens', quantity: 3, unit: 'tokens' }, { meter: 'output_tokens', quantity: 1, unit: 'tokens' }] } };
    const stored = storedEnvelope(plain);
    expect(stored.governance).not.toHaveProperty('actions');
    expect(stored.usage).toEqual({});
    expect(JSON.stringify(envelopeOfRow({ ...row, status: 'completed', status_code: 200, error_code: null, envelope: stored }))).toBe(JSON.stringify(plain));
    // A row stored before the compact form holds the whole envelope: returned as it is.
    expect(envelopeOfRow({ ...row, envelope: env })).toBe(env);
  });
});
