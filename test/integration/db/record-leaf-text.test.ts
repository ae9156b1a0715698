/**
 * `integrity verify` and the events file of exports and archives write call records' leaves from
 * plain columns (src/db/repositories/record-leaf-text.ts); the sequencer hashed them from whole rows
 * (`canonicalRecord` of `readRecordLeaves`). The two must be byte for byte equal on every stored
 * record, or records chained before would stop verifying. Random records and permits are stored and
 * read back both ways: unicode, control characters, quotes, nulls, any JSON in the envelope, the
 * lifecycle and the firewall decision, a session or none, a permit or none, timestamps with
 * microseconds (and years the columns cannot carry, which are read whole).
 *
 * The same rows are an export's or archive's row parts (permits.ndjson, executions.ndjson): each
 * line must be RFC 8785 JSON of the row's `to_jsonb`, parsed with json5 (V8's JSON.parse misreads
 * some escaped names: test/integration/db/canonical-jsonb.test.ts).
 */
import fc from 'fast-check';
import JSON5 from 'json5';
import { Pool } from 'pg';
import { exportRowPages } from '../../../src/db/repositories/compliance-exports';
import { createProject } from '../../../src/db/repositories/projects';
import { readRecordLeaves } from '../../../src/db/repositories/record-leaves';
import { readRecordLeafSourcesOfSeqs, recordLeafCanonical, recordLeafHashes } from '../../../src/db/repositories/record-leaf-text';
import { chainAndLeafHash } from '../../../src/integrity/hashes';
import { canonicalRecord, GENESIS_HASH } from '../../../src/events/canonical';
import { canonicalJson } from '../../../src/events/canonical-json';
import { canonicalJsonbLines } from '../../../src/events/canonical-jsonb';

const tricky = fc.constantFrom('\b', '\f', '\n', '\r', '\t', '\x01', '\x1f', '\x7f', '"', '\\', '/', '\u2028', 'é', '😀', 'a', ' ');
const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: tricky })).map((s) => s.replace(/\0/g, ''));
const optional = fc.option(text, { nil: null });
const noNul = (v: unknown): unknown =>
  typeof v === 'string' ? v.replace(/\0/g, '') : Array.isArray(v) ? v.map(noNul) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/\0/g, ''), noNul(x)])) : v;
const json = fc.jsonValue({ maxDepth: 3 }).map(noNul);
// Microseconds since the epoch: mostly 1900–2200, sometimes years 1–9999, sometimes beyond.
const micros = fc.oneof(
  { arbitrary: fc.bigInt({ min: -2_208_988_800_000_000n, max: 7_258_118_400_000_000n }), weight: 12 },
  { arbitrary: fc.bigInt({ min: -62_135_596_800_000_000n, max: 253_402_300_799_999_999n }), weight: 1 },
  { arbitrary: fc.bigInt({ min: 253_402_300_800_000_000n, max: 8_000_000_000_000_000_000n }), weight: 1 },
).map(String);
const int = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const record = fc.record({
  route: fc.constantFrom('executions', 'execute', 'proxy'),
  operation: text,
  mode: fc.constantFrom('sync', 'stream'),
  status: fc.constantFrom('completed', 'failed', 'denied'),
  status_code: int,
  provider: optional,
  model: optional,
  intent_id: optional,
  idempotency_key: optional,
  key_id: optional,
  job_id: optional,
  session_id: optional,
  input_tokens: int,
  output_tokens: int,
  cost_usd_micros: fc.bigInt({ min: -(2n ** 53n) + 1n, max: 2n ** 53n - 1n }).map(String),
  estimated_final: fc.boolean(),
  error_code: optional,
  created: micros,
  completed: micros,
  duration_ms: int,
  envelope: json,
  lifecycle: fc.option(json, { nil: undefined }),
  permit: fc.option(
    fc.record({
      request_id: optional,
      route: text,
      operation: optional,
      provider: optional,
      model: optional,
      workflow_id: optional,
      decision: fc.constantFrom('allow', 'deny', 'review', 'throttle'),
      reason_code: text,
      display_reason: text,
      reserved_cost_micros: fc.bigInt({ min: 0n, max: 2n ** 53n - 1n }).map(String),
      issued: micros,
      expires: fc.option(micros, { nil: null }),
      metadata: fc.oneof(fc.constant({}), json.map((firewall) => ({ decision_metadata: { firewall } })), json.map((other) => ({ other }))),
    }),
    { nil: null },
  ),
});

/** json5's parse of a text, without the warning it prints for each U+2028 in a string (valid JSON). */
function parseQuietly(text: string): unknown {
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    return JSON5.parse(text);
  } finally {
    console.warn = warn;
  }
}

describe('record leaves from plain columns', () => {
  const db = new Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  afterAll(async () => {
    await db.end();
  });

  it('are exactly the leaves canonicalRecord writes from the stored record and permit', async () => {
    const project = await createProject(db, { name: 'record leaf text', plan: 'production' });
    const samples = fc.sample(record, { numRuns: 400, seed: 20261128 });
    const tag = `${process.pid}_${Date.now()}`;
    const docs = samples.map((s, i) => ({ ...s, lifecycle: s.lifecycle === undefined ? null : s.lifecycle, seq: String(9_000_000_000_000 + i), id: `exec_req_leaftext_${tag}_${i}`, permit_id: s.permit ? `permit_leaftext_${tag}_${i}` : i % 3 === 0 ? null : `permit_missing_${tag}_${i}` }));
    const at = (field: string) => `to_timestamp(0) + (${field})::bigint * interval '1 microsecond'`;
    await db.query(
      `INSERT INTO permits (id, project_id, request_id, route, operation, provider, model, workflow_id, decision, reason_code, display_reason,
                            decision_details, reserved_cost_micros, issued_at, expires_at, metadata)
       SELECT e->>'permit_id', $1, p->>'request_id', p->>'route', p->>'operation', p->>'provider', p->>'model', p->>'workflow_id', p->>'decision',
              p->>'reason_code', p->>'display_reason', '{}'::jsonb, (p->>'reserved_cost_micros')::bigint, ${at("p->>'issued'")},
              CASE WHEN p->'expires' <> 'null' THEN ${at("p->>'expires'")} END, p->'metadata'
         FROM jsonb_array_elements($2::jsonb) AS t(e), LATERAL (SELECT e->'permit' AS p) q WHERE p <> 'null'`,
      [project.id, JSON.stringify(docs)],
    );
    await db.query(
      `INSERT INTO calls (id, project_id, seq, route, operation, mode, status, status_code, permit_id, provider, model, intent_id,
                               idempotency_key, key_id, job_id, session_id, input_tokens, output_tokens, cost_usd_micros, estimated_final,
                               error_code, created_at, completed_at, duration_ms, envelope, lifecycle)
       SELECT e->>'id', $1, (e->>'seq')::bigint, e->>'route', e->>'operation', e->>'mode', e->>'status', (e->>'status_code')::int, e->>'permit_id',
              e->>'provider', e->>'model', e->>'intent_id', e->>'idempotency_key', e->>'key_id', e->>'job_id', e->>'session_id',
              (e->>'input_tokens')::int, (e->>'output_tokens')::int, (e->>'cost_usd_micros')::bigint, (e->>'estimated_final')::boolean,
              e->>'error_code', ${at("e->>'created'")}, ${at("e->>'completed'")}, (e->>'duration_ms')::int, e->'envelope',
              CASE WHEN e->'lifecycle' <> 'null' THEN e->'lifecycle' END
         FROM jsonb_array_elements($2::jsonb) AS t(e)`,
      [project.id, JSON.stringify(docs)],
    );

    const seqs = docs.map((d) => d.seq);
    const whole = new Map((await readRecordLeaves(db, seqs.map(() => project.id), seqs)).map((r) => [r.seq, r]));
    const sources = await readRecordLeafSourcesOfSeqs(db, project.id, seqs);
    expect(whole.size).toBe(docs.length);
    expect(sources.size).toBe(docs.length);
    const prevHashes = [GENESIS_HASH, 'f'.repeat(64), null];
    let fromColumns = 0;
    seqs.forEach((seq, i) => {
      const prev = prevHashes[i % prevHashes.length];
      const source = sources.get(seq)!;
      expect(recordLeafCanonical(source, prev)).toBe(canonicalRecord(whole.get(seq)!, prev));
      // Hashed from the bytes as they are written: the hashes of the same leaf as a string, whatever the link.
      for (const link of [GENESIS_HASH, 'f'.repeat(64), '', 'é']) expect(recordLeafHashes(source, link)).toEqual(chainAndLeafHash(link, canonicalRecord(whole.get(seq)!, link)));
      if (!('row' in source)) fromColumns += 1;
    });
    // The intent column is written under the member name leaves were first chained with.
    const withIntent = docs.find((d) => d.intent_id !== null)!;
    expect(recordLeafCanonical(sources.get(withIntent.seq)!, null)).toContain(`"workflow_intent_id":${JSON.stringify(withIntent.intent_id)}`);
    // Most records are written from their columns; those with years the columns cannot carry, from the whole row.
    expect(fromColumns).toBeGreaterThan(docs.length * 0.6);
    expect(fromColumns).toBeLessThan(docs.length);
    // Every shape the writer has a branch for was met.
    expect(docs.some((d) => d.session_id !== null) && docs.some((d) => d.session_id === null)).toBe(true);
    expect(docs.some((d) => d.permit?.expires === null) && docs.some((d) => d.permit && d.permit.expires !== null)).toBe(true);
    expect(docs.some((d) => d.lifecycle === null) && docs.some((d) => d.permit === null && d.permit_id !== null)).toBe(true);

    // The row parts: every row of the window, in the part's order, as canonicalJson of its to_jsonb (pages of 7 rows: a page's edges too).
    const window = { projectId: project.id, since: new Date('1900-01-01T00:00:00Z'), until: new Date('2200-01-01T00:00:00Z') };
    for (const [part, table, at] of [['permits', 'permits', 'issued_at'], ['executions', 'calls', 'created_at']] as const) {
      const lines: string[] = [];
      for await (const page of exportRowPages(db, part, window, 7)) lines.push(...canonicalJsonbLines(page).toString('utf8').split('\n').slice(0, -1));
      const { rows } = await db.query<{ doc: string }>(`SELECT to_jsonb(t)::text AS doc FROM ${table} t WHERE project_id = $1 AND ${at} >= $2 AND ${at} < $3 ORDER BY ${at}, id`, [
        project.id,
        window.since,
        window.until,
      ]);
      expect(rows.length).toBeGreaterThan(docs.length * 0.3);
      expect(lines).toEqual(rows.map((r) => canonicalJson(parseQuietly(r.doc))));
    }

    await db.query('DELETE FROM calls WHERE project_id = $1', [project.id]);
    await db.query('DELETE FROM permits WHERE project_id = $1', [project.id]);
  });
});
