/** Compliance exports (issue 15): the export rows, their bundle files, and the reads an export is built from. */
import { READ_WITHOUT_JIT, type Db, type Queryable } from '../pool';

/** The API's `include` values and the bundle's file names: they stay when a table is renamed (`executions` reads `calls`, `workflow_intents` reads `intents`). */
export const EXPORT_PARTS = ['events', 'permits', 'executions', 'usage', 'workflow_intents'] as const;
export type ExportPart = (typeof EXPORT_PARTS)[number];
export type ExportStatus = 'queued' | 'running' | 'completed' | 'failed';

export interface ExportRow {
  id: string;
  project_id: string;
  status: ExportStatus;
  window_start: Date;
  window_end: Date;
  include: ExportPart[];
  requested_by: string | null;
  progress: Record<string, unknown>;
  first_index: number | null;
  last_index: number | null;
  checkpoint_size: number | null;
  bundle_sha256: string | null;
  bundle_bytes: number | null;
  error: { code: string; message: string } | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

export async function insertExport(db: Queryable, e: { id: string; projectId: string; since: Date; until: Date; include: ExportPart[]; requestedBy: string }): Promise<ExportRow> {
  const { rows } = await db.query<ExportRow>(
    `INSERT INTO compliance_exports (id, project_id, status, window_start, window_end, include, requested_by)
     VALUES ($1, $2, 'queued', $3, $4, $5, $6) RETURNING *`,
    [e.id, e.projectId, e.since, e.until, e.include, e.requestedBy],
  );
  return rows[0];
}

export async function findExport(db: Queryable, projectId: string | null, id: string): Promise<ExportRow | null> {
  const { rows } = await db.query<ExportRow>('SELECT * FROM compliance_exports WHERE id = $1 AND ($2::text IS NULL OR project_id = $2)', [id, projectId]);
  return rows[0] ?? null;
}

export async function listExports(db: Queryable, projectId: string, opts: { beforeId?: string; status?: ExportStatus; limit: number }): Promise<ExportRow[]> {
  const { rows } = await db.query<ExportRow>(
    `SELECT * FROM compliance_exports WHERE project_id = $1 AND ($2::text IS NULL OR id < $2) AND ($3::text IS NULL OR status = $3)
      ORDER BY id DESC LIMIT $4`,
    [projectId, opts.beforeId ?? null, opts.status ?? null, opts.limit],
  );
  return rows;
}

export async function updateExport(
  db: Queryable,
  id: string,
  patch: Partial<Pick<ExportRow, 'status' | 'progress' | 'first_index' | 'last_index' | 'checkpoint_size' | 'bundle_sha256' | 'bundle_bytes' | 'error'>> & {
    started?: boolean;
    completed?: boolean;
    /** Merged into progress in the same statement, so a reader never sees a final status with a stale phase. */
    mergeProgress?: Record<string, unknown>;
  },
): Promise<void> {
  await db.query(
    `UPDATE compliance_exports SET
        status = coalesce($2, status),
        progress = coalesce($3::jsonb, progress) || coalesce($13::jsonb, '{}'::jsonb),
        first_index = CASE WHEN $4::boolean THEN $5 ELSE first_index END,
        last_index = CASE WHEN $4::boolean THEN $6 ELSE last_index END,
        checkpoint_size = CASE WHEN $4::boolean THEN $7 ELSE checkpoint_size END,
        bundle_sha256 = coalesce($8, bundle_sha256),
        bundle_bytes = coalesce($9, bundle_bytes),
        error = coalesce($10::jsonb, error),
        started_at = CASE WHEN $11::boolean THEN coalesce(started_at, now()) ELSE started_at END,
        completed_at = CASE WHEN $12::boolean THEN now() ELSE completed_at END
      WHERE id = $1`,
    [
      id,
      patch.status ?? null,
      patch.progress ? JSON.stringify(patch.progress) : null,
      'first_index' in patch,
      patch.first_index ?? null,
      patch.last_index ?? null,
      patch.checkpoint_size ?? null,
      patch.bundle_sha256 ?? null,
      patch.bundle_bytes ?? null,
      patch.error ? JSON.stringify(patch.error) : null,
      patch.started ?? false,
      patch.completed ?? false,
      patch.mergeProgress ? JSON.stringify(patch.mergeProgress) : null,
    ],
  );
}

/** Merges keys into the export's progress document. */
export async function mergeExportProgress(db: Queryable, id: string, progress: Record<string, unknown>): Promise<void> {
  await db.query('UPDATE compliance_exports SET progress = progress || $2::jsonb WHERE id = $1', [id, JSON.stringify(progress)]);
}

/** Where a file's bytes are: its chunks in compliance_export_chunks, or one object in the archive store. */
export type ExportFileStorage = 'database' | 'archive_store';

/**
 * Completes a file of `chunks` writes. Its chunk rows past them go (an earlier attempt's longer
 * tail), and all of them when the file is in the archive store (an attempt from before it).
 */
export async function putExportFile(
  db: Queryable,
  f: { exportId: string; name: string; sha256: string; records: number; bytes: number; chunks: number; storedIn: ExportFileStorage },
): Promise<void> {
  await db.query(
    `WITH stale AS (DELETE FROM compliance_export_chunks WHERE export_id = $1 AND name = $2 AND chunk >= CASE WHEN $7 = 'database' THEN $6 ELSE 0 END)
     INSERT INTO compliance_export_files (export_id, name, sha256, records, bytes, chunks, stored_in) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (export_id, name) DO UPDATE SET sha256 = EXCLUDED.sha256, records = EXCLUDED.records, bytes = EXCLUDED.bytes, chunks = EXCLUDED.chunks, stored_in = EXCLUDED.stored_in`,
    [f.exportId, f.name, f.sha256, f.records, f.bytes, f.chunks, f.storedIn],
  );
}

export interface ExportFileRow {
  name: string;
  sha256: string;
  records: number;
  bytes: number;
  /** How many writes made the file (its chunk rows when stored_in is `database`). */
  chunks: number;
  stored_in: ExportFileStorage;
}

export async function listExportFiles(db: Queryable, exportId: string): Promise<ExportFileRow[]> {
  const { rows } = await db.query<ExportFileRow>(
    'SELECT name, sha256, records, bytes::float8 AS bytes, chunks, stored_in FROM compliance_export_files WHERE export_id = $1 ORDER BY name',
    [exportId],
  );
  return rows;
}

export async function readExportChunk(db: Queryable, exportId: string, name: string, chunk: number): Promise<Buffer> {
  const { rows } = await db.query<{ content: Buffer }>('SELECT content FROM compliance_export_chunks WHERE export_id = $1 AND name = $2 AND chunk = $3', [exportId, name, chunk]);
  if (!rows[0]) throw new Error(`export ${exportId}: chunk ${chunk} of ${name} is missing`);
  return rows[0].content;
}

/**
 * Chain positions of the project's chained leaves whose time falls in [since, until): events by
 * their timestamp, call records by `completed_at` (their leaf event's timestamp). A record was
 * created before it completed, so `created_at < until` only lets its index narrow the read.
 */
export async function windowPositions(db: Queryable, projectId: string, since: Date, until: Date): Promise<{ first: number | null; last: number | null; count: number }> {
  const { rows } = await db.query<{ first: number | null; last: number | null; count: number }>(
    `SELECT min(w.chain_pos) AS first, max(w.chain_pos) AS last, count(*)::int AS count
       FROM (SELECT c.chain_pos FROM events e JOIN event_chain c ON c.seq = e.seq
              WHERE e.project_id = $1 AND e.timestamp >= $2 AND e.timestamp < $3
             UNION ALL
             SELECT c.chain_pos FROM calls x JOIN event_chain c ON c.seq = x.seq
              WHERE x.project_id = $1 AND x.seq IS NOT NULL AND x.created_at < $3 AND x.completed_at >= $2 AND x.completed_at < $3) w`,
    [projectId, since, until],
  );
  return { first: rows[0].first === null ? null : Number(rows[0].first), last: rows[0].last === null ? null : Number(rows[0].last), count: rows[0].count };
}

/**
 * Column types whose text in `row_to_json` is the text `to_jsonb` writes for them (the same
 * escapes, numeric and timestamp forms, jsonb's own text); any other column (a float, whose
 * numeric form differs, or json) is selected as `to_jsonb` of it.
 */
const JSON_SAME_TYPES = new Set(['text', 'character varying', 'integer', 'bigint', 'smallint', 'boolean', 'numeric', 'jsonb', 'timestamp with time zone', 'timestamp without time zone', 'date', 'uuid']);

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * The statement of `table`'s rows whose time `at` falls in the window ($1 the project, [$2, $3)),
 * in (`at`, id) order, each as JSON text whose members are the columns in RFC 8785 order (their
 * names' UTF-16 order): the row's document `to_jsonb(t)` holds, as text the canonical writer keeps
 * in order (jsonb's text orders members by length, and the writer reordered every row, about a
 * quarter of its time per row). The row of a subquery in FROM, not a subquery per row: PostgreSQL
 * ran that one's plan for each row, most of its work per row.
 */
async function rowJsonSql(db: Queryable, table: string, at: string): Promise<string> {
  const { rows } = await db.query<{ name: string; type: string }>(
    `SELECT attname AS name, format_type(atttypid, NULL) AS type FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
    [table],
  );
  const columns = rows
    .map((r) => r.name)
    .sort()
    .map((name) => {
      const type = rows.find((r) => r.name === name)!.type;
      return `${JSON_SAME_TYPES.has(type) ? `t.${ident(name)}` : `to_jsonb(t.${ident(name)})`} AS ${ident(name)}`;
    });
  return `SELECT row_to_json(c)::text AS doc FROM (SELECT ${columns.join(', ')} FROM ${ident(table)} t WHERE project_id = $1 AND ${ident(at)} >= $2 AND ${ident(at)} < $3) c ORDER BY c.${ident(at)}, c.id`;
}

/**
 * The usage part's rows: the window's call records and permit usage reports in time order, members
 * in canonical order (json keeps the order it is built in). The two kinds' rows are sorted first
 * and their documents built above the sort, a page at a time: built below it, the whole window's
 * were built and sorted at the first FETCH, one burst of the server's CPU that no pause between
 * pages could spread.
 */
export const USAGE_ROWS_SQL = `
  SELECT (CASE WHEN u.kind = 'execution'
            THEN json_build_object('at', u.at, 'cost_usd_micros', u.cost_usd_micros, 'estimated_final', u.estimated_final, 'execution_id', u.k,
                   'input_tokens', u.input_tokens, 'kind', 'execution', 'model', u.model, 'output_tokens', u.output_tokens, 'permit_id', u.permit_id,
                   'provider', u.provider)
            ELSE json_build_object('at', u.at, 'cost_usd_micros', u.cost_usd_micros, 'input_tokens', u.input_tokens, 'kind', 'permit_usage_report',
                   'occurred_at', u.occurred_at, 'output_tokens', u.output_tokens, 'permit_id', u.permit_id, 'status', u.status)
          END)::text AS doc
    FROM (SELECT 'execution' AS kind, created_at AS at, id AS k, cost_usd_micros, estimated_final, input_tokens, model, output_tokens, permit_id, provider,
                 NULL::timestamptz AS occurred_at, NULL::text AS status
            FROM calls WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
          UNION ALL
          SELECT 'permit_usage_report', reported_at, permit_id, billed_cost_micros, NULL, input_tokens, NULL, output_tokens, permit_id, NULL, occurred_at, status
            FROM permit_usage_reports WHERE project_id = $1 AND reported_at >= $2 AND reported_at < $3
          ORDER BY at, k) u
   ORDER BY u.at, u.k`;

/**
 * The rows of a non-event part in the window, as JSON text of each document (`to_jsonb` of the row,
 * members in canonical order), in a stable order, `pageSize` at a time: one query read through a
 * cursor in its own transaction, so a window's documents are never all in memory at once. The
 * text, not the parsed value: the writer makes it canonical without parsing it
 * (`canonicalJsonbLines`), which parsing each row whole and writing it out again cost several times over.
 */
export async function* exportRowPages(db: Db, part: Exclude<ExportPart, 'events'>, window: { projectId: string; since: Date; until: Date }, pageSize = 2000): AsyncGenerator<string[]> {
  const { projectId, since, until } = window;
  // The part keeps the spec's name `executions` (the bundle's executions.ndjson); its rows are the call records.
  const rowsOf = { permits: { table: 'permits', at: 'issued_at' }, executions: { table: 'calls', at: 'created_at' }, workflow_intents: { table: 'intents', at: 'declared_at' } };
  const statement =
    part === 'usage'
      ? USAGE_ROWS_SQL
      : await rowJsonSql(db, rowsOf[part].table, rowsOf[part].at);
  const client = await db.connect();
  let open = false;
  try {
    await client.query(READ_WITHOUT_JIT);
    open = true;
    await client.query(`DECLARE export_rows NO SCROLL CURSOR FOR ${statement}`, [projectId, since, until]);
    const fetch = () => client.query<{ doc: string }>(`FETCH ${Number(pageSize)} FROM export_rows`);
    // The next page is fetched while the reader writes this one out.
    let next = fetch();
    for (;;) {
      const { rows } = await next;
      if (rows.length === 0) break;
      next = fetch();
      next.catch(() => undefined);
      yield rows.map((r) => r.doc);
    }
    await client.query('COMMIT');
    open = false;
  } finally {
    // Failed, or left by its reader before the end.
    if (open) await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
}

/** Adds `part` to the export's progress.parts_done (once). */
export async function markExportPartDone(db: Queryable, exportId: string, part: ExportPart): Promise<void> {
  await db.query(
    `UPDATE compliance_exports SET progress = jsonb_set(progress, '{parts_done}',
        (SELECT coalesce(jsonb_agg(DISTINCT v), '[]'::jsonb) FROM jsonb_array_elements_text(coalesce(progress->'parts_done', '[]'::jsonb) || to_jsonb($2::text)) v))
      WHERE id = $1`,
    [exportId, part],
  );
}
