/**
 * The merge rules of the event log (src/events/merge.ts): stored rows and the events derived from
 * call records in one seq order, timelines with calls in flight last, the governance list's filters
 * on a derived event, and the stream's ids (one per chain position, on its last event sent).
 */
import type { EventRecord } from '../../../src/events/types';
import { filterReachesRecords, matchesFilter, mergeBySeq, streamFrames, timelineOf, type LogEvent } from '../../../src/events/merge';

function ev(seq: number | string | null, over: Partial<LogEvent> = {}): LogEvent {
  return {
    seq: seq as number,
    id: `evt_${seq}`,
    project_id: 'proj_1',
    timestamp: new Date('2026-01-01T00:00:00Z'),
    event_type: 'permit.allowed',
    source: 'permits',
    phase: 'permit',
    provider: null,
    model: null,
    permit_id: null,
    request_id: null,
    job_id: null,
    session_id: null,
    metadata: {},
    prev_hash: null,
    hash: null,
    ...over,
  };
}
const seqs = (es: EventRecord[]) => es.map((e) => Number(e.seq));

describe('mergeBySeq', () => {
  const stored = [ev('64'), ev('256'), ev('512')]; // pg returns bigint seqs as text
  const derived = [ev(129), ev(130), ev(131), ev(321), ev(322)];

  it('interleaves both lists ascending, comparing seqs as numbers', () => {
    expect(seqs(mergeBySeq(stored, derived, 'asc'))).toEqual([64, 129, 130, 131, 256, 321, 322, 512]);
  });

  it('interleaves descending lists and stops at the limit', () => {
    const desc = mergeBySeq([...stored].reverse(), [...derived].reverse(), 'desc', 4);
    expect(seqs(desc)).toEqual([512, 322, 321, 256]);
  });

  it('takes from one list when the other is empty', () => {
    expect(seqs(mergeBySeq([], derived, 'asc', 2))).toEqual([129, 130]);
    expect(seqs(mergeBySeq(stored, [], 'asc'))).toEqual([64, 256, 512]);
  });
});

describe('timelineOf', () => {
  it('orders stored and recorded events by seq and puts events in flight last', () => {
    const stored = [ev('100', { request_id: 'exec_a', event_type: 'firewall.flagged' }), ev('300', { request_id: 'exec_a', event_type: 'job.completed' })];
    const recorded = [ev(202, { request_id: 'exec_a', event_type: 'routing.selected_model' }), ev(201, { request_id: 'exec_a' })];
    const inFlight = [ev(null, { request_id: 'exec_b', event_type: 'execution.started' })];
    const t = timelineOf(stored, recorded, inFlight);
    expect(t.map((e) => e.event_type)).toEqual(['firewall.flagged', 'permit.allowed', 'routing.selected_model', 'job.completed', 'execution.started']);
  });

  it('drops the in-flight events of a call whose record was read too (recorded between the reads)', () => {
    const recorded = [ev(65, { request_id: 'exec_a', event_type: 'permit.allowed' }), ev(66, { request_id: 'exec_a', event_type: 'request.completed' })];
    const inFlight = [ev(null, { request_id: 'exec_a', event_type: 'permit.allowed' })];
    expect(timelineOf([], recorded, inFlight).map((e) => e.seq)).toEqual([65, 66]);
  });
});

describe('matchesFilter', () => {
  const e = ev(1, { event_type: 'usage.recorded', timestamp: new Date('2026-02-01T00:00:00Z'), request_id: 'exec_a', permit_id: 'permit_a' });

  it('applies every filter as the list query applies it to a row', () => {
    expect(matchesFilter(e, {})).toBe(true);
    expect(matchesFilter(e, { eventTypes: ['usage.recorded', 'x'] })).toBe(true);
    expect(matchesFilter(e, { eventTypes: ['request.completed'] })).toBe(false);
    // since is inclusive, until exclusive.
    expect(matchesFilter(e, { since: new Date('2026-02-01T00:00:00Z') })).toBe(true);
    expect(matchesFilter(e, { since: new Date('2026-02-01T00:00:00.001Z') })).toBe(false);
    expect(matchesFilter(e, { until: new Date('2026-02-01T00:00:00Z') })).toBe(false);
    expect(matchesFilter(e, { until: new Date('2026-02-01T00:00:00.001Z') })).toBe(true);
    expect(matchesFilter(e, { requestId: 'exec_a', permitId: 'permit_a' })).toBe(true);
    expect(matchesFilter(e, { requestId: 'exec_b' })).toBe(false);
    expect(matchesFilter(e, { permitId: 'permit_b' })).toBe(false);
  });

  it('says when no derived type can match', () => {
    expect(filterReachesRecords({})).toBe(true);
    expect(filterReachesRecords({ eventTypes: ['budget.cap_exceeded', 'request.completed'] })).toBe(true);
    expect(filterReachesRecords({ eventTypes: ['budget.cap_exceeded', 'job.completed'] })).toBe(false);
  });
});

describe('streamFrames', () => {
  // Position 1: a stored event; 2: a record's three events; 3: a stored event.
  const rows = [
    { ...ev(64, { event_type: 'policy.updated' }), chain_pos: 1 },
    { ...ev(129, { event_type: 'permit.allowed' }), chain_pos: 2 },
    { ...ev(130, { event_type: 'usage.recorded' }), chain_pos: 2 },
    { ...ev(131, { event_type: 'request.completed' }), chain_pos: 2 },
    { ...ev(192, { event_type: 'budget.cap_exceeded' }), chain_pos: 3 },
  ];

  it('sends the id only on the last event of each position', () => {
    expect(streamFrames(rows, null).map((f) => [f.event.event_type, f.id])).toEqual([
      ['policy.updated', 1],
      ['permit.allowed', null],
      ['usage.recorded', null],
      ['request.completed', 2],
      ['budget.cap_exceeded', 3],
    ]);
  });

  it('with a type filter, the id goes on the last event sent of a position', () => {
    const frames = streamFrames(rows, new Set(['permit.allowed', 'usage.recorded', 'budget.cap_exceeded']));
    expect(frames.map((f) => [f.event.event_type, f.id])).toEqual([
      ['permit.allowed', null],
      ['usage.recorded', 2],
      ['budget.cap_exceeded', 3],
    ]);
  });
});
