/**
 * The sequencer hashes events from pieces PostgreSQL renders (CANONICAL_PARTS_SQL); verification,
 * exports and the integrity log hash the same events from whole rows (canonicalEvent). The two must
 * be byte for byte equal on every stored event, or chains the sequencer writes would fail to verify.
 * Random events are stored and read back both ways: unicode, control characters, quotes, nulls,
 * nested metadata with any JSON numbers, timestamps with microseconds.
 */
import fc from 'fast-check';
import { Pool } from 'pg';
import { CANONICAL_PARTS_SQL, canonicalEvent, canonicalFromParts, GENESIS_HASH, type CanonicalParts, type EventRecord } from '../../../src/db/repositories/events';

// Text PostgreSQL stores as given: no NUL, no lone surrogates.
const tricky = fc.constantFrom('\b', '\f', '\n', '\r', '\t', '\x01', '\x1f', '\x7f', '"', '\\', '/', '\u2028', 'é', '😀', 'a', ' ');
const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: tricky })).map((s) => s.replace(/\0/g, ''));
const optional = fc.option(text, { nil: null });
const noNul = (v: unknown): unknown =>
  typeof v === 'string' ? v.replace(/\0/g, '') : Array.isArray(v) ? v.map(noNul) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/\0/g, ''), noNul(x)])) : v;
const event = fc.record({
  event_type: text,
  source: text,
  phase: text,
  provider: optional,
  model: optional,
  permit_id: optional,
  request_id: optional,
  job_id: optional,
  session_id: optional,
  metadata: fc.dictionary(text, fc.jsonValue({ maxDepth: 3 })).map(noNul),
  // Microseconds, 1900–2200: PostgreSQL keeps them, a Date (and so canonicalEvent) keeps milliseconds.
  micros: fc.bigInt({ min: -2_208_988_800_000_000n, max: 7_258_118_400_000_000n }),
});

describe('CANONICAL_PARTS_SQL', () => {
  const db = new Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  const projectId = `proj_canonical_parts_${process.pid}_${Date.now()}`;
  afterAll(async () => {
    await db.query('DELETE FROM events WHERE project_id = $1', [projectId]);
    await db.end();
  });

  it('renders exactly what canonicalEvent writes for the stored row', async () => {
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
    const { rows: parts } = await db.query<CanonicalParts & { seq: string }>(`SELECT e.seq, ${CANONICAL_PARTS_SQL} FROM events e WHERE e.seq = ANY($1::bigint[]) ORDER BY e.seq`, [seqs]);
    expect(parts).toHaveLength(whole.length);
    const prevHashes = [GENESIS_HASH, 'f'.repeat(64), null];
    parts.forEach((p, i) => {
      const prev = prevHashes[i % prevHashes.length];
      expect(canonicalFromParts(p, prev)).toBe(canonicalEvent(whole[i], prev));
    });
  });
});
