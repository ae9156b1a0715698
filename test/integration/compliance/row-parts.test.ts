/**
 * An export's or archive's row parts (permits, executions, usage) are written from the text of each
 * row's document (`row_to_json` of its columns in canonical order, `canonicalJsonbLines`), not from
 * `to_jsonb` of the row parsed and canonicalised again. The files must be
 * byte for byte what the parsed path wrote (`canonicalJson` of the value the same text holds; parsed
 * here with json5, as V8's JSON.parse can misread escaped member names: docs/decisions/
 * event-hash-chain.md), or archives written before would no longer match their
 * manifests' hashes when rebuilt. Random permits and call records are stored (unicode, control
 * characters, quotes, any JSON in the envelope, lifecycle and metadata, big and negative amounts,
 * microsecond timestamps), each part built, and its file compared with the parsed path's lines.
 */
import fc from 'fast-check';
import JSON5 from 'json5';
import { Pool } from 'pg';
import { buildExportPart, exportBundle } from '../../../src/compliance/build';
import { readTar } from '../../../src/compliance/tar';
import { insertExport, USAGE_ROWS_SQL, type ExportPart } from '../../../src/db/repositories/compliance-exports';
import { createProject } from '../../../src/db/repositories/projects';
import { canonicalJson } from '../../../src/events/canonical-json';

const tricky = fc.constantFrom('\b', '\f', '\n', '\r', '\t', '\x01', '\x1f', '\x7f', '"', '\\', '/', '\u2028', 'é', '😀', 'ｱ', 'a', ' ');
const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: tricky })).map((s) => s.replace(/\0/g, ''));
const optional = fc.option(text, { nil: null });
const noNul = (v: unknown): unknown =>
  typeof v === 'string' ? v.replace(/\0/g, '') : Array.isArray(v) ? v.map(noNul) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/\0/g, ''), noNul(x)])) : v;
const json = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.dictionary(fc.string({ unit: tricky }), fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), text))).map(noNul);
// Microseconds since the epoch inside the export's window (2000–2100).
const micros = fc.bigInt({ min: 946_684_800_000_000n, max: 4_102_444_799_999_999n }).map(String);
const int = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const amount = fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }).map(String);
const row = fc.record({
  operation: text,
  status: fc.constantFrom('completed', 'failed', 'denied'),
  provider: optional,
  model: optional,
  input_tokens: int,
  output_tokens: int,
  cost_usd_micros: amount,
  estimated_final: fc.boolean(),
  error_code: optional,
  created: micros,
  completed: micros,
  envelope: json,
  lifecycle: fc.option(json, { nil: null }),
  permit: fc.option(fc.record({ route: text, reason_code: text, display_reason: text, reserved_cost_micros: amount, issued: micros, expires: fc.option(micros, { nil: null }), details: json, metadata: json }), { nil: null }),
  // The permit's usage report, when it has one (the usage part's second kind of line).
  report: fc.option(fc.record({ status: fc.constantFrom('completed', 'failed'), input_tokens: int, output_tokens: int, billed: amount, occurred: fc.option(micros, { nil: null }), reported: micros }), { nil: null }),
});

interface PlanNode {
  'Node Type': string;
  Output: string[];
  Plans?: PlanNode[];
}

describe('row parts from jsonb text', () => {
  const db = new Pool({ connectionString: process.env.DATABASE_URL, max: 3 });
  afterAll(async () => {
    await db.end();
  });

  it('build the usage part’s documents above its sort, a page at a time, not the whole window’s at the first FETCH', async () => {
    const c = await db.connect();
    try {
      await c.query('BEGIN');
      const { rows } = await c.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (VERBOSE, FORMAT JSON) DECLARE usage_rows NO SCROLL CURSOR FOR ${USAGE_ROWS_SQL}`, [
        'proj_none',
        new Date(0),
        new Date(),
      ]);
      const top = rows[0]['QUERY PLAN'][0].Plan;
      const nodes: PlanNode[] = [];
      const walk = (n: PlanNode) => {
        nodes.push(n);
        for (const child of n.Plans ?? []) walk(child);
      };
      walk(top);
      const sorts = nodes.filter((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Incremental Sort' || n['Node Type'] === 'Merge Append');
      expect(sorts.length).toBeGreaterThan(0);
      for (const n of sorts) expect(n.Output.join(' ')).not.toContain('json_build_object');
      expect(top.Output.join(' ')).toContain('json_build_object');
    } finally {
      await c.query('ROLLBACK');
      c.release();
    }
  });

  it('are byte for byte the files the parsed rows wrote', async () => {
    const project = await createProject(db, { name: 'row parts text', plan: 'production' });
    const tag = `${process.pid}_${Date.now()}`;
    const docs = fc.sample(row, { numRuns: 300, seed: 20261128 }).map((s, i) => ({ ...s, id: `exec_req_rowparts_${tag}_${i}`, permit_id: s.permit ? `permit_rowparts_${tag}_${i}` : null }));
    const at = (field: string) => `to_timestamp(0) + (${field})::bigint * interval '1 microsecond'`;
    await db.query(
      `INSERT INTO permits (id, project_id, route, decision, reason_code, display_reason, decision_details, reserved_cost_micros, issued_at, expires_at, metadata)
       SELECT e->>'permit_id', $1, p->>'route', 'allow', p->>'reason_code', p->>'display_reason', p->'details', (p->>'reserved_cost_micros')::bigint,
              ${at("p->>'issued'")}, CASE WHEN p->'expires' <> 'null' THEN ${at("p->>'expires'")} END, p->'metadata'
         FROM jsonb_array_elements($2::jsonb) AS t(e), LATERAL (SELECT e->'permit' AS p) q WHERE p <> 'null'`,
      [project.id, JSON.stringify(docs)],
    );
    await db.query(
      `INSERT INTO calls (id, project_id, route, operation, mode, status, status_code, permit_id, provider, model, input_tokens, output_tokens,
                         cost_usd_micros, estimated_final, error_code, created_at, completed_at, duration_ms, envelope, lifecycle)
       SELECT e->>'id', $1, 'executions', e->>'operation', 'sync', e->>'status', 200, e->>'permit_id', e->>'provider', e->>'model',
              (e->>'input_tokens')::int, (e->>'output_tokens')::int, (e->>'cost_usd_micros')::bigint, (e->>'estimated_final')::boolean,
              e->>'error_code', ${at("e->>'created'")}, ${at("e->>'completed'")}, 1, e->'envelope', CASE WHEN e->'lifecycle' <> 'null' THEN e->'lifecycle' END
         FROM jsonb_array_elements($2::jsonb) AS t(e)`,
      [project.id, JSON.stringify(docs)],
    );

    await db.query(
      `INSERT INTO permit_usage_reports (permit_id, project_id, usage_idempotency_key, request_hash, status, input_tokens, output_tokens, billed_cost_micros,
                                         occurred_at, reported_at, reported_by, response)
       SELECT e->>'permit_id', $1, 'usage', 'hash', r->>'status', (r->>'input_tokens')::int, (r->>'output_tokens')::int, (r->>'billed')::bigint,
              CASE WHEN r->'occurred' <> 'null' THEN ${at("r->>'occurred'")} END, ${at("r->>'reported'")}, 'key_test', '{}'
         FROM jsonb_array_elements($2::jsonb) AS t(e), LATERAL (SELECT e->'report' AS r) q WHERE e->'permit' <> 'null' AND r <> 'null'`,
      [project.id, JSON.stringify(docs)],
    );

    const window = { projectId: project.id, since: new Date('2000-01-01T00:00:00Z'), until: new Date('2100-01-01T00:00:00Z') };
    const parts: ExportPart[] = ['permits', 'executions', 'usage'];
    const exp = await insertExport(db, { id: `exp_rowparts_${tag}`, since: window.since, until: window.until, projectId: project.id, include: parts, requestedBy: 'test' });
    const deps = { db, config: { env: 'test' as const, masterKey: undefined, databaseUrl: process.env.DATABASE_URL!, archiveStore: { kind: 'directory' as const, dir: process.env.ARCHIVE_DIR! } } };
    for (const part of parts) await buildExportPart(deps, exp.id, part);
    const pieces: Buffer[] = [];
    for await (const piece of (await exportBundle(deps, exp.id)).pieces) pieces.push(piece);
    const files = readTar(Buffer.concat(pieces));

    const permits = docs.filter((d) => d.permit).length;
    const reports = docs.filter((d) => d.permit && d.report).length;
    // The documents each part stands for, as jsonb (`to_jsonb` of the row; the usage lines' objects), in the part's order.
    const reference: Record<string, string> = {
      permits: `SELECT to_jsonb(t)::text AS doc FROM permits t WHERE project_id = $1 ORDER BY issued_at, id`,
      executions: `SELECT to_jsonb(t)::text AS doc FROM calls t WHERE project_id = $1 ORDER BY created_at, id`,
      usage: `SELECT doc::text AS doc FROM (
                SELECT jsonb_build_object('kind', 'execution', 'execution_id', id, 'permit_id', permit_id, 'provider', provider, 'model', model,
                         'input_tokens', input_tokens, 'output_tokens', output_tokens, 'cost_usd_micros', cost_usd_micros,
                         'estimated_final', estimated_final, 'at', created_at) AS doc, created_at AS at, id AS k
                  FROM calls WHERE project_id = $1
                UNION ALL
                SELECT jsonb_build_object('kind', 'permit_usage_report', 'permit_id', permit_id, 'status', status, 'input_tokens', input_tokens,
                         'output_tokens', output_tokens, 'cost_usd_micros', billed_cost_micros, 'occurred_at', occurred_at, 'at', reported_at),
                       reported_at, permit_id
                  FROM permit_usage_reports WHERE project_id = $1) u ORDER BY at, k`,
    };
    let reordered = 0;
    for (const part of parts) {
      // The parsed path: jsonb's text of the document parsed, then canonicalJson.
      const parsed: string[] = [];
      for (const { doc: t } of (await db.query<{ doc: string }>(reference[part], [project.id])).rows) {
        parsed.push(canonicalJson(JSON5.parse(t)));
        if (parsed[parsed.length - 1] !== t.replace(/": /g, '":').replace(/, "/g, ',"')) reordered += 1;
      }
      expect(parsed.length).toBe(part === 'permits' ? permits : part === 'usage' ? docs.length + reports : docs.length);
      expect(files.get(`${part}.ndjson`)?.equals(Buffer.from(parsed.map((l) => `${l}\n`).join(''), 'utf8'))).toBe(true);
    }
    // Rows whose jsonb text is more than its whitespace away from canonical (members reordered, numbers rewritten) were met.
    expect(permits).toBeGreaterThan(50);
    expect(reports).toBeGreaterThan(20);
    expect(reordered).toBeGreaterThan(docs.length);

    await db.query('DELETE FROM permit_usage_reports WHERE project_id = $1', [project.id]);
    await db.query('DELETE FROM calls WHERE project_id = $1', [project.id]);
    await db.query('DELETE FROM permits WHERE project_id = $1', [project.id]);
  });
});
