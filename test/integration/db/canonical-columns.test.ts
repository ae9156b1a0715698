/**
 * The sequencer hashes events from their plain columns (CANONICAL_COLUMNS_SQL, canonicalFromColumns); verification,
 * exports and the integrity log hash the same events from whole rows (canonicalEvent). The two must
 * be byte for byte equal on every stored event, or chains the sequencer writes would fail to verify.
 * Random events are stored and read back both ways: unicode, control characters, quotes, nulls,
 * nested metadata with any JSON numbers, timestamps with microseconds.
 */
import fc from 'fast-check';
import { Pool } from 'pg';
import { eventFieldArbitraries } from '../../support/event-arbitraries';
import { appendEvents } from '../../../src/db/repositories/events';
import { CANONICAL_COLUMNS_SQL } from '../../../src/db/repositories/canonical-columns';
import { canonicalEvent, canonicalFromColumns, GENESIS_HASH, type CanonicalColumns } from '../../../src/events/canonical';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import type { EventRecord } from '../../../src/events/types';

// Text PostgreSQL stores as given: no NUL, no lone surrogates.
const tricky = fc.constantFrom('\b', '\f', '\n', '\r', '\t', '\x01', '\x1f', '\x7f', '"', '\\', '/', '\u2028', 'é', '😀', 'a', ' ');
const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: tricky })).map((s) => s.replace(/\0/g, ''));
const noNul = (v: unknown): unknown =>
  typeof v === 'string' ? v.replace(/\0/g, '') : Array.isArray(v) ? v.map(noNul) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/\0/g, ''), noNul(x)])) : v;
const event = fc.record({
  ...eventFieldArbitraries(text, fc.jsonValue({ maxDepth: 3 }).map(noNul)),
  // Microseconds: PostgreSQL keeps them, a Date (and so canonicalEvent) keeps milliseconds. Mostly
  // 1900–2200; sometimes years 1–9999, and beyond (which the SQL leaves to the whole row).
  micros: fc.oneof(
    { arbitrary: fc.bigInt({ min: -2_208_988_800_000_000n, max: 7_258_118_400_000_000n }), weight: 8 },
    { arbitrary: fc.bigInt({ min: -62_135_596_800_000_000n, max: 253_402_300_799_999_999n }), weight: 1 },
    { arbitrary: fc.bigInt({ min: 253_402_300_800_000_000n, max: 8_000_000_000_000_000_000n }), weight: 1 },
  ),
});

describe('CANONICAL_COLUMNS_SQL', () => {
  const db = new Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  const projectId = `proj_canonical_parts_${process.pid}_${Date.now()}`;
  afterAll(async () => {
    await db.query('DELETE FROM events WHERE project_id = $1', [projectId]);
    await db.end();
  });

  it('gives exactly what canonicalEvent writes for the stored row', async () => {
    const samples = fc.sample(event, { numRuns: 400, seed: 20261126 });
    const { rows: inserted } = await db.query<{ seq: string }>(
      `INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id, job_id, session_id, metadata)
       SELECT $1 || '_' || ord, $2, to_timestamp(0) + (e->>'micros')::bigint * interval '1 microsecond', e->>'event_type', e->>'source', e->>'phase',
              e->>'provider', e->>'model', e->>'permit_id', e->>'request_id', e->>'job_id', e->>'session_id', e->'metadata'
         FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS t(e, ord)
       RETURNING seq`,
      [`evt_canonical_${process.pid}_${Date.now()}`, projectId, JSON.stringify(samples.map((s) => ({ ...s, micros: String(s.micros) })))],
    );
    expect(inserted).toHaveLength(samples.length);

    const seqs = inserted.map((r) => r.seq);
    const { rows: whole } = await db.query<EventRecord>('SELECT * FROM events WHERE seq = ANY($1::bigint[]) ORDER BY seq', [seqs]);
    const { rows: parts } = await db.query<CanonicalColumns>(`SELECT e.seq, ${CANONICAL_COLUMNS_SQL} FROM events e WHERE e.seq = ANY($1::bigint[]) ORDER BY e.seq`, [seqs]);
    expect(parts).toHaveLength(whole.length);
    const prevHashes = [GENESIS_HASH, 'f'.repeat(64), null];
    let rendered = 0;
    parts.forEach((p, i) => {
      const prev = prevHashes[i % prevHashes.length];
      const year = new Date(whole[i].timestamp).getUTCFullYear();
      const fromColumns = canonicalFromColumns(p, prev);
      if (year >= 1 && year <= 9999) {
        expect(fromColumns).toBe(canonicalEvent(whole[i], prev));
        // Again, with the metadata's canonical form now cached (short texts are).
        expect(canonicalFromColumns(p, prev)).toBe(fromColumns);
        rendered += 1;
      } else {
        expect(fromColumns).toBeNull(); // the sequencer hashes such an event from its whole row
      }
    });
    expect(rendered).toBeGreaterThan(samples.length * 0.8);
    expect(rendered).toBeLessThan(samples.length);
  });

  it('the sequencer chains events of either kind so that the chain verifies', async () => {
    const chained = `${projectId}_chain`;
    const base = { projectId: chained, source: 'test', phase: 'test' };
    await appendEvents(db, [{ ...base, eventType: 'test.plain', metadata: { note: 'quote " backslash \\ tab \t é 😀', n: 1.5e-7, big: 2 ** 60 }, timestamp: new Date('2026-11-26T12:00:00.123Z') }]);
    // A year the application cannot write (PostgreSQL does not parse toISOString's six-digit years),
    // stored directly with its pending-chain row, as the request path would queue it.
    await db.query(
      `WITH e AS (INSERT INTO events (id, project_id, timestamp, event_type, source, phase, model)
                  VALUES ($1, $2, '12000-01-01 00:00:00.5+00', 'test.far_future', 'test', 'test', E'm\\u0001') RETURNING seq)
       INSERT INTO event_chain_pending (project_id, first_seq, seqs) SELECT $2, seq, ARRAY[seq] FROM e`,
      [`evt_far_${process.pid}_${Date.now()}`, chained],
    );
    await appendEvents(db, [{ ...base, eventType: 'test.plain_again', metadata: { nested: { b: [1, 'x'], a: null } }, timestamp: new Date('1999-12-31T23:59:59.999Z') }]);
    const result = await verifyEventChain(db, chained);
    expect(result).toMatchObject({ ok: true, count: 3 });
    await db.query('DELETE FROM event_chain WHERE project_id = $1', [chained]);
    await db.query('DELETE FROM events WHERE project_id = $1', [chained]);
  });
});
