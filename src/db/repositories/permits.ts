import { Queryable } from '../pool';
import type { Decision, DecisionDetails } from '../../governance/types';

export type ReservationState = 'none' | 'active' | 'settled' | 'released' | 'expired';

export interface PermitRecord {
  id: string;
  project_id: string;
  request_id: string | null;
  route: string;
  operation: string | null;
  provider: string | null;
  model: string | null;
  workflow_id: string | null;
  decision: Decision;
  reason_code: string;
  display_reason: string;
  decision_details: DecisionDetails;
  actions: { type: string; message: string }[];
  estimated_input_tokens: number;
  estimated_output_tokens: number;
  estimated_cost_micros: number | null;
  reservation_state: ReservationState;
  reservation_periods: { kind: string; start: string }[];
  reserved_cost_micros: number;
  actual_cost_micros: number | null;
  actual_input_tokens: number | null;
  actual_output_tokens: number | null;
  settled_at: Date | null;
  released_at: Date | null;
  release_reason: string | null;
  issued_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  revoked_by: string | null;
  revocation_reason: string | null;
  parent_permit_id: string | null;
  idempotency_key: string | null;
  metadata: Record<string, unknown>;
  /** A pipeline call in flight: what closing it needs if its process dies (src/pipeline/inflight.ts); cleared when recorded. */
  closing: Record<string, unknown> | null;
  /** With `closing`: after this the call can no longer be running (its process enforces the dispatch timeout). */
  dispatch_deadline: Date | null;
}

export type NewPermit = Pick<PermitRecord, 'id' | 'project_id' | 'route' | 'decision' | 'reason_code' | 'display_reason' | 'decision_details' | 'actions' | 'issued_at'> &
  Partial<
    Pick<
      PermitRecord,
      | 'request_id'
      | 'operation'
      | 'provider'
      | 'model'
      | 'workflow_id'
      | 'estimated_input_tokens'
      | 'estimated_output_tokens'
      | 'estimated_cost_micros'
      | 'reservation_state'
      | 'reservation_periods'
      | 'reserved_cost_micros'
      | 'expires_at'
      | 'parent_permit_id'
      | 'idempotency_key'
      | 'metadata'
      | 'closing'
      | 'dispatch_deadline'
    >
  >;

const JSON_COLS = new Set(['decision_details', 'actions', 'reservation_periods', 'metadata', 'closing']);

export async function insertPermit(db: Queryable, p: NewPermit): Promise<PermitRecord> {
  const entries = Object.entries(p).filter(([, v]) => v !== undefined);
  const cols = entries.map(([k]) => k);
  const values = entries.map(([k, v]) => (JSON_COLS.has(k) ? JSON.stringify(v) : v));
  const { rows } = await db.query<PermitRecord>(
    `INSERT INTO permits (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING *`,
    values,
  );
  return rows[0];
}

export async function findPermit(db: Queryable, projectId: string, permitId: string): Promise<PermitRecord | null> {
  const { rows } = await db.query<PermitRecord>('SELECT * FROM permits WHERE project_id = $1 AND id = $2', [projectId, permitId]);
  return rows[0] ?? null;
}

/** Row-locks a permit inside a transaction. */
export async function findPermitForUpdate(db: Queryable, permitId: string): Promise<PermitRecord | null> {
  const { rows } = await db.query<PermitRecord>('SELECT * FROM permits WHERE id = $1 FOR UPDATE', [permitId]);
  return rows[0] ?? null;
}

export async function listPermitsByRequest(db: Queryable, projectId: string, requestId: string): Promise<PermitRecord[]> {
  const { rows } = await db.query<PermitRecord>(
    'SELECT * FROM permits WHERE project_id = $1 AND request_id = $2 ORDER BY issued_at, id',
    [projectId, requestId],
  );
  return rows;
}

/** Ancestors via parent_permit_id, nearest first (bounded depth). */
export async function listPermitLineage(db: Queryable, projectId: string, permitId: string): Promise<PermitRecord[]> {
  const { rows } = await db.query<PermitRecord>(
    `WITH RECURSIVE chain AS (
       SELECT p.*, 0 AS depth FROM permits p WHERE p.project_id = $1 AND p.id = $2
       UNION ALL
       SELECT p.*, c.depth + 1 FROM permits p JOIN chain c ON p.id = c.parent_permit_id WHERE c.depth < 100 AND p.project_id = $1
     ) SELECT * FROM chain ORDER BY depth`,
    [projectId, permitId],
  );
  return rows.map(({ depth: _d, ...r }: PermitRecord & { depth?: number }) => r);
}

export async function listChildPermits(db: Queryable, projectId: string, permitId: string): Promise<PermitRecord[]> {
  const { rows } = await db.query<PermitRecord>(
    'SELECT * FROM permits WHERE project_id = $1 AND parent_permit_id = $2 ORDER BY issued_at, id',
    [projectId, permitId],
  );
  return rows;
}

export interface PermitFilters {
  decision?: string;
  reason_code?: string;
  request_id?: string;
  workflow_id?: string;
  provider?: string;
  model?: string;
  route?: string;
  reservation_state?: ReservationState;
  issued_after?: Date;
  issued_before?: Date;
}

/** Opaque cursor: base64url of `<issued_at ISO>|<id>` of the last row returned. */
export function encodeCursor(p: Pick<PermitRecord, 'issued_at' | 'id'>): string {
  return Buffer.from(`${new Date(p.issued_at).toISOString()}|${p.id}`).toString('base64url');
}

export function decodeCursor(cursor: string): { issuedAt: Date; id: string } | null {
  const raw = Buffer.from(cursor, 'base64url').toString('utf8');
  const i = raw.indexOf('|');
  if (i < 0) return null;
  const issuedAt = new Date(raw.slice(0, i));
  if (Number.isNaN(issuedAt.getTime())) return null;
  return { issuedAt, id: raw.slice(i + 1) };
}

/** Newest first. Returns the page and the cursor for the next page (null at the end). */
export async function listPermits(
  db: Queryable,
  projectId: string,
  filters: PermitFilters = {},
  paging: { cursor?: string | null; limit?: number } = {},
): Promise<{ data: PermitRecord[]; next_cursor: string | null }> {
  const { cursor = null, limit = 50 } = paging;
  const where = ['project_id = $1'];
  const params: unknown[] = [projectId];
  const eq = (col: keyof PermitFilters) => {
    const v = filters[col];
    if (v !== undefined) {
      params.push(v);
      where.push(`${col} = $${params.length}`);
    }
  };
  (['decision', 'reason_code', 'request_id', 'workflow_id', 'provider', 'model', 'route', 'reservation_state'] as const).forEach(eq);
  if (filters.issued_after) {
    params.push(filters.issued_after);
    where.push(`issued_at >= $${params.length}`);
  }
  if (filters.issued_before) {
    params.push(filters.issued_before);
    where.push(`issued_at < $${params.length}`);
  }
  if (cursor) {
    const c = decodeCursor(cursor);
    if (c) {
      params.push(c.issuedAt, c.id);
      where.push(`(issued_at, id) < ($${params.length - 1}, $${params.length})`);
    }
  }
  const n = Math.max(1, Math.min(limit, 500));
  params.push(n + 1);
  const { rows } = await db.query<PermitRecord>(
    `SELECT * FROM permits WHERE ${where.join(' AND ')} ORDER BY issued_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  const page = rows.slice(0, n);
  return { data: page, next_cursor: rows.length > n ? encodeCursor(page[page.length - 1]) : null };
}

/** Records a permit's revocation (run inside governance's project lock: src/governance/index.ts). */
export async function markPermitRevoked(db: Queryable, permitId: string, input: { revokedBy: string; reason: string; at: Date }): Promise<PermitRecord> {
  const { rows } = await db.query<PermitRecord>(
    'UPDATE permits SET revoked_at = $2, revoked_by = $3, revocation_reason = $4 WHERE id = $1 RETURNING *',
    [permitId, input.at, input.revokedBy, input.reason],
  );
  return rows[0];
}

export async function findPermitProjectId(db: Queryable, permitId: string): Promise<string | null> {
  const { rows } = await db.query<{ project_id: string }>('SELECT project_id FROM permits WHERE id = $1', [permitId]);
  return rows[0]?.project_id ?? null;
}

/** Ids of permits whose reservation is still active after their expiry (oldest first). */
export async function listExpiredActivePermitIds(db: Queryable, now: Date, opts: { projectId?: string; limit: number }): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM permits WHERE reservation_state = 'active' AND expires_at <= $1 AND ($2::text IS NULL OR project_id = $2)
      ORDER BY expires_at LIMIT $3`,
    [now, opts.projectId ?? null, opts.limit],
  );
  return rows.map((r) => r.id);
}

/** The newest permit issued under an idempotency key (the root holds the column, revalidations the metadata). */
export async function findPermitHeadByIdempotencyKey(db: Queryable, projectId: string, key: string): Promise<PermitRecord | null> {
  const { rows } = await db.query<PermitRecord>(
    `SELECT * FROM permits
      WHERE project_id = $1 AND (idempotency_key = $2 OR (metadata ? 'idempotency_key' AND metadata->>'idempotency_key' = $2))
      ORDER BY issued_at DESC, id DESC LIMIT 1`,
    [projectId, key],
  );
  return rows[0] ?? null;
}

/** Permits issued in [from, to), oldest first, for the export stream (keyset pages). */
export async function listPermitsForExport(
  db: Queryable,
  projectId: string,
  window: { from: Date; to: Date },
  page: { after: { issuedAt: Date; id: string } | null; limit: number },
): Promise<PermitRecord[]> {
  const { after, limit } = page;
  const params: unknown[] = [projectId, window.from, window.to, limit];
  let keyset = '';
  if (after) {
    params.push(after.issuedAt, after.id);
    keyset = 'AND (issued_at, id) > ($5, $6)';
  }
  const { rows } = await db.query<PermitRecord>(
    `SELECT * FROM permits WHERE project_id = $1 AND issued_at >= $2 AND issued_at < $3 ${keyset}
      ORDER BY issued_at, id LIMIT $4`,
    params,
  );
  return rows;
}

/** Every permit descending from `permitId` via parent_permit_id (revalidations, attestations), oldest first. */
export async function listDescendantPermits(db: Queryable, projectId: string, permitId: string): Promise<PermitRecord[]> {
  const { rows } = await db.query<PermitRecord & { depth?: number }>(
    `WITH RECURSIVE tree AS (
       SELECT p.*, 1 AS depth FROM permits p WHERE p.project_id = $1 AND p.parent_permit_id = $2
       UNION ALL
       SELECT p.*, t.depth + 1 FROM permits p JOIN tree t ON p.parent_permit_id = t.id WHERE t.depth < 100 AND p.project_id = $1
     ) SELECT * FROM tree ORDER BY issued_at, id`,
    [projectId, permitId],
  );
  return rows.map(({ depth: _d, ...r }) => r);
}

/** Allowed permits of an intent per lease id (`metadata->>leaseKey`): the calls each lease consumed. */
export async function countPermitsByLease(db: Queryable, leaseKey: string, intent: { projectId: string; workflowId: string; leaseIds: string[] }): Promise<Record<string, number>> {
  const { projectId, workflowId, leaseIds } = intent;
  const { rows } = await db.query<{ lease: string; n: number }>(
    `SELECT metadata->>$4 AS lease, count(*)::int AS n FROM permits
      WHERE project_id = $1 AND workflow_id = $2 AND decision = 'allow' AND metadata->>$4 = ANY($3::text[])
      GROUP BY 1`,
    [projectId, workflowId, leaseIds, leaseKey],
  );
  return Object.fromEntries(rows.map((r) => [r.lease, r.n]));
}
