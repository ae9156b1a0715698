/**
 * canonicalEvent (src/events/canonical.ts) writes an event's canonical JSON field by field;
 * it must stay byte for byte what the generic RFC 8785 form of the same record gives, or every
 * chain hashed before would stop verifying.
 */
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { canonicalEvent, canonicalRecord } from '../../../src/events/canonical';
import { recordLeafEvent } from '../../../src/executions/record-leaf';
import type { PermitColumns, RecordColumns } from '../../../src/executions/lifecycle';
import type { EventRecord } from '../../../src/events/types';
import { eventFieldArbitraries } from '../../support/event-arbitraries';

/** The form chains were hashed with before: the record as an object, through canonicalize. */
function generic(e: Omit<EventRecord, 'hash'>): string {
  return canonicalize({
    seq: Number(e.seq),
    id: e.id,
    project_id: e.project_id,
    timestamp: new Date(e.timestamp).toISOString(),
    event_type: e.event_type,
    source: e.source,
    phase: e.phase,
    provider: e.provider ?? null,
    model: e.model ?? null,
    permit_id: e.permit_id ?? null,
    request_id: e.request_id ?? null,
    job_id: e.job_id ?? null,
    session_id: e.session_id ?? null,
    metadata: e.metadata ?? {},
    prev_hash: e.prev_hash,
  }) as string;
}

const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }));
const record = fc.record({
  seq: fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.bigInt({ min: 1n, max: 2n ** 50n }).map(String)) as fc.Arbitrary<number>,
  id: text,
  project_id: text,
  timestamp: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }),
  ...eventFieldArbitraries(text),
  prev_hash: fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: null }),
});

describe('canonicalEvent', () => {
  it('equals the generic canonical form of the same record (random records, unicode, nested metadata)', () => {
    fc.assert(
      fc.property(record, (e) => {
        expect(canonicalEvent(e)).toBe(generic(e));
      }),
      { numRuns: 2000, seed: 20261126 },
    );
  });

  it('hashes with the prev_hash it is given, as the record with that prev_hash would', () => {
    fc.assert(
      fc.property(record, fc.stringMatching(/^[0-9a-f]{64}$/), (e, prev) => {
        expect(canonicalEvent(e, prev)).toBe(generic({ ...e, prev_hash: prev }));
      }),
      { numRuns: 500, seed: 7 },
    );
  });

  it('keeps the generic form for missing optional columns and an ISO timestamp given as text', () => {
    const e = { seq: 3, id: 'evt_1', project_id: 'proj_1', timestamp: '2026-11-26T04:00:00.000Z' as unknown as Date, event_type: 'permit.allowed', source: 'permits', phase: 'permit', metadata: { b: 1, a: [true, null, 'é'] }, prev_hash: null } as unknown as Omit<EventRecord, 'hash'>;
    expect(canonicalEvent(e)).toBe(generic(e));
    expect(canonicalEvent(e)).toBe(
      '{"event_type":"permit.allowed","id":"evt_1","job_id":null,"metadata":{"a":[true,null,"é"],"b":1},"model":null,"permit_id":null,"phase":"permit","prev_hash":null,"project_id":"proj_1","provider":null,"request_id":null,"seq":3,"session_id":null,"source":"permits","timestamp":"2026-11-26T04:00:00.000Z"}',
    );
  });

  it('writes a call record\'s leaf as canonicalEvent of its leaf event (the metadata canonicalised once)', () => {
    const json = fc.jsonValue() as fc.Arbitrary<Record<string, unknown>>;
    const date = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true });
    const row = fc.record({
      id: text,
      project_id: text,
      seq: fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 1, max: 2 ** 40 }).map(String)),
      route: text,
      operation: text,
      mode: text,
      status: text,
      status_code: fc.oneof(fc.integer(), fc.integer().map(String)),
      permit_id: fc.option(text, { nil: null }),
      provider: fc.option(text, { nil: null }),
      model: fc.option(text, { nil: null }),
      job_id: fc.option(text, { nil: null }),
      input_tokens: fc.integer(),
      output_tokens: fc.integer(),
      cost_usd_micros: fc.oneof(fc.integer(), fc.integer().map(String)),
      estimated_final: fc.boolean(),
      error_code: fc.option(text, { nil: null }),
      created_at: date,
      completed_at: date,
      recorded_at: date,
      envelope: json,
      lifecycle: fc.option(json, { nil: null }),
      added_column: fc.option(json, { nil: undefined }),
    }) as unknown as fc.Arbitrary<RecordColumns & Record<string, unknown>>;
    const permit = fc.option(
      fc.record({
        id: text,
        project_id: text,
        request_id: fc.option(text, { nil: null }),
        route: text,
        operation: fc.option(text, { nil: null }),
        provider: fc.option(text, { nil: null }),
        model: fc.option(text, { nil: null }),
        workflow_id: fc.option(text, { nil: null }),
        decision: text,
        reason_code: text,
        display_reason: text,
        reserved_cost_micros: fc.oneof(fc.integer(), fc.integer().map(String)),
        issued_at: date,
        expires_at: fc.option(date, { nil: null }),
        metadata: fc.record({ decision_metadata: fc.record({ firewall: fc.option(json, { nil: undefined }) }) }),
      }) as unknown as fc.Arbitrary<PermitColumns>,
      { nil: null },
    );
    fc.assert(
      fc.property(row, permit, fc.stringMatching(/^[0-9a-f]{64}$/), (r, p, prev) => {
        const leaf = { project_id: r.project_id, seq: String(r.seq), row: r, permit: p };
        expect(canonicalRecord(leaf, prev)).toBe(canonicalEvent({ ...recordLeafEvent(r, p), prev_hash: prev }));
      }),
      { numRuns: 1000, seed: 40 },
    );
  });
});
