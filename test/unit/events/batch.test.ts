import { batchEvents, eventRows } from '../../../src/events/batch';
import type { NewEvent } from '../../../src/events/types';

// What tollgate_insert_batch_events (migration 0107) reads for a field: the event's own value when
// it has the key, else the call's event_defaults, else NULL.
function expand(call: ReturnType<typeof batchEvents>): Record<string, unknown>[] {
  const fields = ['timestamp', 'source', 'phase', 'provider', 'model', 'permit_id', 'request_id', 'job_id', 'session_id'];
  return call.events.map((e) => {
    const row: Record<string, unknown> = { id: e.id, event_type: e.event_type, metadata: e.metadata ?? {} };
    for (const f of fields) row[f] = f in e ? e[f] : (call.event_defaults[f] ?? null);
    return row;
  });
}

const at = new Date('2026-11-26T10:00:00.000Z');
const base = { projectId: 'proj_1', source: 'execution_events', permitId: 'permit_1', requestId: 'exec_req_1', provider: 'openai', model: 'gpt-4o-mini', timestamp: at };

describe('batchEvents', () => {
  it('sends the fields every event shares once, and the rows expand to what eventRows writes', () => {
    const events: NewEvent[] = [
      { ...base, eventType: 'provider.response_received', phase: 'execution', metadata: { status: 200 } },
      { ...base, eventType: 'usage.recorded', phase: 'usage', metadata: { input_tokens: 12 } },
      { ...base, eventType: 'request.completed', phase: 'execution', model: 'gpt-4o', timestamp: new Date(at.getTime() + 5) },
    ];
    const call = batchEvents(events);
    expect(call.event_defaults).toEqual({ source: 'execution_events', provider: 'openai', permit_id: 'permit_1', request_id: 'exec_req_1' });
    // Differing fields stay on each event; shared ones and nulls are not repeated; no project id.
    expect(call.events[0]).toEqual({ id: expect.stringMatching(/^evt_/), event_type: 'provider.response_received', phase: 'execution', model: 'gpt-4o-mini', timestamp: at.toISOString(), metadata: { status: 200 } });
    expect(call.events[2]).toMatchObject({ model: 'gpt-4o', timestamp: '2026-11-26T10:00:00.005Z' });
    for (const e of call.events) {
      expect(e).not.toHaveProperty('project_id');
      expect(e).not.toHaveProperty('job_id');
    }

    const full = eventRows('proj_1', events).map(({ project_id: _p, id: _id, ...r }) => r);
    expect(expand(call).map(({ id: _id, ...r }) => r)).toEqual(full);
  });

  it('keeps a field on the events that have it when others lack it', () => {
    const call = batchEvents([
      { ...base, eventType: 'permit.allowed', phase: 'permit', sessionId: 'sess_1' },
      { ...base, eventType: 'execution.started', phase: 'execution' },
    ]);
    expect(call.event_defaults).not.toHaveProperty('session_id');
    expect(call.events[0].session_id).toBe('sess_1');
    expect(call.events[1]).not.toHaveProperty('session_id');
    expect(expand(call)[1].session_id).toBeNull();
  });

  it('gives an empty call no events and no defaults', () => {
    expect(batchEvents([])).toEqual({ events: [], event_defaults: {} });
  });
});
