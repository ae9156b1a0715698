/**
 * The merged event log (src/db/repositories/log-events.ts) against a database: stored event rows
 * interleaved with call records whose events are derived. Every page size, both orders and every
 * filter walk the same events, each once, in seq order, as a reference merge built here from the
 * rows themselves (stored rows, and `recordEvents` of each record).
 */
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../../../src/db/pool';
import { appendEvents } from '../../../src/db/repositories/events';
import type { EventRecord } from '../../../src/events/types';
import { chainedEventsAfter, findLogEvent, listLogEvents, permitsEvents, requestTimeline } from '../../../src/db/repositories/log-events';
import { insertPermit, type PermitRecord } from '../../../src/db/repositories/permits';
import { lifecycleOf, type DispatchStart, type Lifecycle, type RecordColumns } from '../../../src/executions/lifecycle';
import { recordEvents } from '../../../src/executions/lifecycle-events';
import type { EventFilter } from '../../../src/events/merge';
import { governanceEventView } from '../../../src/events/view';
import { projectWithPolicy, testPool } from '../governance/helpers';

const BASE = Date.parse('2026-03-01T00:00:00Z');
const at = (minute: number) => new Date(BASE + minute * 60_000);

/** A call dispatched `minute` minutes after BASE (its record's created_at). */
function dispatchAt(minute: number): DispatchStart {
  return {
    at: new Date(BASE + minute * 60_000).toISOString(),
    primary: { provider: 'openai', model: 'gpt-4o-mini' },
    routing: { reason_code: 'explicit_request', requested_provider: 'openai', requested_model: 'gpt-4o-mini' },
    started: { operation: 'generate.text', mode: 'sync' },
    stream: false,
  };
}

function lifecycle(minute: number, fallback: boolean): Lifecycle {
  const t = (s: number) => new Date(BASE + minute * 60_000 + s * 1000).toISOString();
  const attempts = fallback
    ? [
        { provider: 'openai', model: 'gpt-4o-mini', sentAt: t(0), receivedAt: t(1), status: 500, failureKind: 'http_5xx' },
        { provider: 'anthropic', model: 'claude-haiku-4-5', sentAt: t(2), receivedAt: t(3), status: 200 },
      ]
    : [{ provider: 'openai', model: 'gpt-4o-mini', sentAt: t(0), receivedAt: t(1), status: 200 }];
  return lifecycleOf(at(minute).toISOString(), dispatchAt(minute), { attempts, end: { kind: 'ok', finishReason: 'stop' }, envelopeReason: 'explicit_request' });
}

/** The stored envelope's members the derived events read. */
const ENVELOPE = JSON.stringify({ routing: { requested_provider: 'openai', requested_model: 'gpt-4o-mini', reason_code: 'explicit_request' }, usage: { total_tokens: 30 } });

describe('the merged event log', () => {
  let db: Db;
  let projectId: string;
  /** Every event of the project, in seq order, built from the rows. */
  let reference: EventRecord[];
  const records: RecordColumns[] = [];
  const permits = new Map<string, PermitRecord>();

  beforeAll(async () => {
    db = testPool(4);
    projectId = await projectWithPolicy(db);
    for (let i = 0; i < 9; i++) {
      // One or two stored events, then a call record (every third without a permit, every fourth with a fallback).
      const stored = Array.from({ length: 1 + (i % 2) }, (_, k) => ({
        projectId,
        eventType: k === 0 ? 'budget.cap_exceeded' : 'policy.updated',
        source: 'test',
        phase: 'test',
        requestId: `req_stored_${i}`,
        timestamp: at(i * 10 + k),
        metadata: { i, k },
      }));
      await appendEvents(db, stored);
      const id = `exec_${randomUUID().replace(/-/g, '')}`;
      let permitId: string | null = null;
      if (i % 3 !== 0) {
        permitId = `permit_${randomUUID().replace(/-/g, '')}`;
        const p = await insertPermit(db, {
          id: permitId, project_id: projectId, route: 'executions', decision: 'allow', reason_code: 'policy.active_policy_candidate',
          display_reason: 'allowed', decision_details: {} as PermitRecord['decision_details'], actions: [], issued_at: at(i * 10 + 4), request_id: id, operation: 'generate.text',
          provider: 'openai', model: 'gpt-4o-mini', reserved_cost_micros: 10, expires_at: at(i * 10 + 9), metadata: {},
        });
        permits.set(permitId, p);
      }
      const minute = i * 10 + 5;
      const { rows } = await db.query<RecordColumns>(
        `INSERT INTO calls (id, project_id, route, operation, mode, status, status_code, permit_id, provider, model, input_tokens, output_tokens,
                                 cost_usd_micros, estimated_final, created_at, completed_at, duration_ms, envelope, seq, lifecycle)
         VALUES ($1, $2, 'executions', 'generate.text', 'sync', 'completed', 200, $3, $4, $5, 10, 20, 30, false, $6, $7, 1000, $8, nextval('events_seq_seq'), $9)
         RETURNING id, project_id, seq, permit_id, job_id, operation, mode, status, status_code, provider, model, input_tokens, output_tokens,
                   cost_usd_micros, estimated_final, error_code, created_at, completed_at, envelope, lifecycle`,
        [id, projectId, permitId, i % 4 === 1 ? 'anthropic' : 'openai', i % 4 === 1 ? 'claude-haiku-4-5' : 'gpt-4o-mini', at(minute), at(minute + 1),
          ENVELOPE, JSON.stringify(lifecycle(minute, i % 4 === 1))],
      );
      records.push(rows[0]);
    }
    const { rows: storedRows } = await db.query<EventRecord>('SELECT * FROM events_chained WHERE project_id = $1', [projectId]);
    const derived = records.flatMap((r) => recordEvents(r, r.permit_id ? permits.get(r.permit_id)! : null));
    reference = [...storedRows, ...derived].sort((a, b) => Number(a.seq) - Number(b.seq));
  });
  afterAll(async () => db?.end());

  /** Every page of a filter with `limit`, following the cursor as the route does (the last event's seq). */
  async function walk(f: EventFilter, order: 'asc' | 'desc', limit: number): Promise<string[]> {
    const ids: string[] = [];
    let afterSeq: number | undefined;
    for (let pages = 0; pages < 500; pages++) {
      const page = await listLogEvents(db, projectId, { ...f, order, afterSeq, limit });
      ids.push(...page.map((e) => e.id));
      if (page.length < limit) return ids;
      afterSeq = Number(page[page.length - 1].seq);
    }
    throw new Error('no last page');
  }

  it('builds a reference of stored and derived events that interleave', () => {
    expect(reference.length).toBeGreaterThan(60);
    const kinds = reference.map((e) => (e.id.includes('.') ? 'd' : 's')).join('');
    expect(kinds).toMatch(/^s+d+s+d+/);
  });

  const filters: [string, () => EventFilter][] = [
    ['no filter', () => ({})],
    ['a stored type and a derived type', () => ({ eventTypes: ['budget.cap_exceeded', 'request.completed'] })],
    ['derived types only', () => ({ eventTypes: ['provider.request_sent'] })],
    ['since and until', () => ({ since: at(23), until: at(61) })],
    ['one request', () => ({ requestId: records[4].id })],
    ['one permit', () => ({ permitId: records[5].permit_id! })],
  ];

  it.each(filters)('walks every page size in both orders without a gap or a repeat: %s', async (_, filterOf) => {
    const f = filterOf();
    const expected = reference
      .filter((e) => (!f.eventTypes || f.eventTypes.includes(e.event_type)) && (!f.since || new Date(e.timestamp) >= f.since) && (!f.until || new Date(e.timestamp) < f.until))
      .filter((e) => (f.requestId === undefined || e.request_id === f.requestId) && (f.permitId === undefined || e.permit_id === f.permitId))
      .map((e) => e.id);
    expect(expected.length).toBeGreaterThan(0);
    for (const limit of [1, 2, 3, 7, 50, 200]) {
      expect(await walk(f, 'asc', limit)).toEqual(expected);
      expect(await walk(f, 'desc', limit)).toEqual([...expected].reverse());
    }
  });

  it('answers a derived event by its id, and a stored one', async () => {
    const derived = reference.find((e) => e.event_type === 'usage.recorded')!;
    const found = await findLogEvent(db, projectId, derived.id);
    expect(found).toMatchObject({ id: derived.id, seq: derived.seq, event_type: 'usage.recorded', metadata: derived.metadata, chain_pos: null });
    const stored = reference.find((e) => e.event_type === 'policy.updated')!;
    expect((await findLogEvent(db, projectId, stored.id))?.id).toBe(stored.id);
    expect(await findLogEvent(db, projectId, `evt_${records[0].id}.40`)).toBeNull();
    expect(await findLogEvent(db, 'proj_other', derived.id)).toBeNull();
  });

  it('gives a request and a permit their timelines, and a call in flight its first events last', async () => {
    const r = records[4];
    const fromRecord = reference.filter((e) => e.request_id === r.id).map((e) => e.event_type);
    expect(fromRecord.slice(0, 3)).toEqual(['permit.allowed', 'permit.expiry_scheduled', 'routing.selected_model']);
    expect(((await requestTimeline(db, projectId, r.id)).events).map((e) => e.event_type)).toEqual(fromRecord);
    expect((await permitsEvents(db, projectId, [r.permit_id!])).map((e) => e.event_type)).toEqual(fromRecord);
    // The request's permits are read once, by request: the record's permit is among them, not read again by id.
    const sent: string[] = [];
    const counting = { query: (text: string, params?: unknown[]) => (sent.push(text), db.query(text, params)) } as unknown as Queryable;
    const timeline = await requestTimeline(counting, projectId, r.id);
    expect(timeline.permits.map((p) => p.id)).toEqual([r.permit_id]);
    expect(timeline.events.map((e) => e.event_type)).toEqual(fromRecord);
    expect(sent.filter((q) => /FROM permits\b/.test(q))).toEqual(['SELECT * FROM permits WHERE project_id = $1 AND request_id = $2 ORDER BY issued_at, id']);

    // A call still running: its permit carries the in-flight marker, no record yet.
    const executionId = `exec_${randomUUID().replace(/-/g, '')}`;
    const permitId = `permit_${randomUUID().replace(/-/g, '')}`;
    await appendEvents(db, [{ projectId, eventType: 'firewall.flagged', source: 'firewall', phase: 'firewall', requestId: executionId, permitId, metadata: { categories: ['pii'] } }]);
    await insertPermit(db, {
      id: permitId, project_id: projectId, route: 'executions', decision: 'allow', reason_code: 'policy.active_policy_candidate',
      display_reason: 'allowed', decision_details: {} as PermitRecord['decision_details'], actions: [], issued_at: at(200), request_id: executionId, operation: 'generate.text',
      provider: 'openai', model: 'gpt-4o-mini', reserved_cost_micros: 10, metadata: {},
      // A deadline far ahead: reconciliation of a server sharing the database must leave this
      // fabricated call alone (its marker lacks what closing a real call needs).
      closing: { input: { executionId }, dispatch: dispatchAt(200) }, dispatch_deadline: new Date('2999-01-01T00:00:00Z'),
    });
    const inFlight = (await requestTimeline(db, projectId, executionId)).events;
    expect(inFlight.map((e) => e.event_type)).toEqual(['firewall.flagged', 'permit.allowed', 'routing.selected_model', 'execution.started', 'provider.request_sent']);
    expect(inFlight.slice(1).every((e) => e.seq === null && e.request_id === executionId && e.permit_id === permitId)).toBe(true);
    expect((await permitsEvents(db, projectId, [permitId])).map((e) => e.event_type)).toEqual(inFlight.map((e) => e.event_type));
  });
});

describe('the chain read: a record chained as one leaf stands for its derived events', () => {
  let db: Db;
  beforeAll(() => {
    db = testPool(2);
  });
  afterAll(async () => db?.end());

  it('expands a record\'s chain row to its events, all at its position, narrowed by type and range', async () => {
    const projectId = await projectWithPolicy(db);
    // Stored without queueing them for the sequencer: this test writes their chain rows itself, and
    // a sequencer of a server sharing the database must not chain them too.
    const storeUnqueued = (eventType: string, timestamp: Date) =>
      db.query("INSERT INTO events (id, project_id, timestamp, event_type, source, phase) VALUES ($1, $2, $3, $4, 'test', 'test')", [`evt_${randomUUID().replace(/-/g, '')}`, projectId, timestamp, eventType]);
    await storeUnqueued('policy.updated', at(0));
    const id = `exec_${randomUUID().replace(/-/g, '')}`;
    await db.query(
      `INSERT INTO calls (id, project_id, route, operation, mode, status, status_code, provider, model, created_at, completed_at, duration_ms, envelope, seq, lifecycle)
       VALUES ($1, $2, 'executions', 'generate.text', 'sync', 'completed', 200, 'openai', 'gpt-4o-mini', $3, $4, 1000, $5, nextval('events_seq_seq'), $6)`,
      [id, projectId, at(1), at(2), ENVELOPE, JSON.stringify(lifecycle(1, false))],
    );
    await storeUnqueued('budget.cap_exceeded', at(3));
    // Chain rows as the sequencer writes them (hashes made up: this reads them, it does not verify them).
    const { rows: seqs } = await db.query<{ seq: string }>(
      'SELECT seq FROM events WHERE project_id = $1 UNION ALL SELECT seq FROM calls WHERE project_id = $1 ORDER BY seq',
      [projectId],
    );
    const hashOf = (i: number) => String(i).repeat(64);
    for (const [i, r] of seqs.entries()) {
      await db.query('INSERT INTO event_chain (seq, project_id, chain_pos, prev_hash, hash) VALUES ($1, $2, $3, $4, $5)', [r.seq, projectId, i + 1, hashOf(i), hashOf(i + 1)]);
    }
    const all = await chainedEventsAfter(db, projectId, { afterPos: 0, limit: 10 });
    expect(all.to).toBe(3);
    expect(all.events.map((e) => [e.chain_pos, e.event_type])).toEqual([
      [1, 'policy.updated'],
      [2, 'routing.selected_model'],
      [2, 'execution.started'],
      [2, 'provider.request_sent'],
      [2, 'provider.response_received'],
      [2, 'usage.recorded'],
      [2, 'request.completed'],
      [3, 'budget.cap_exceeded'],
    ]);
    // A derived event shows its record's place in the chain; a stored one its own.
    const completed = all.events.find((e) => e.event_type === 'request.completed')!;
    expect(governanceEventView(completed)).toMatchObject({ id: `evt_${id}.6`, position: 2, chain: { seq: Number(seqs[1].seq), prev_hash: hashOf(1), hash: hashOf(2) } });
    expect(governanceEventView(all.events[0])).toMatchObject({ position: 1, chain: { seq: Number(seqs[0].seq), prev_hash: hashOf(0), hash: hashOf(1) } });
    expect(await findLogEvent(db, projectId, completed.id)).toMatchObject({ chain_pos: 2, link: { hash: hashOf(2) } });

    const typed = await chainedEventsAfter(db, projectId, { afterPos: 0, types: ['request.completed', 'budget.cap_exceeded'] });
    expect(typed.events.map((e) => [e.chain_pos, e.event_type])).toEqual([[2, 'request.completed'], [3, 'budget.cap_exceeded']]);
    const storedOnly = await chainedEventsAfter(db, projectId, { afterPos: 0, types: ['budget.cap_exceeded'] });
    expect(storedOnly.events.map((e) => e.chain_pos)).toEqual([3]);
    const firstTwo = await chainedEventsAfter(db, projectId, { afterPos: 0, toPos: 2 });
    expect(firstTwo.events.map((e) => e.chain_pos)).toEqual([1, 2, 2, 2, 2, 2, 2]);
    expect((await chainedEventsAfter(db, projectId, { afterPos: 3 })).to).toBeNull();

    // A stream whose client left: the chain rows' statement already sent is the last one.
    const sent: string[] = [];
    const counting = { query: (text: string, params?: unknown[]) => (sent.push(text), db.query(text, params)) } as unknown as Queryable;
    const left = new AbortController();
    const afterLeaving = chainedEventsAfter(counting, projectId, { afterPos: 0, limit: 10, signal: left.signal });
    left.abort();
    expect(await afterLeaving).toEqual({ events: [], to: null });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain('FROM event_chain');
    sent.length = 0;
    expect((await chainedEventsAfter(counting, projectId, { afterPos: 0, limit: 10, signal: new AbortController().signal })).to).toBe(3);
    // The chain rows, then the records (this record has no permit to read).
    expect(sent).toHaveLength(2);
  });
});
