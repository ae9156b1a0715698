import { Queryable } from '../pool';
import { GOVERNANCE_LOCK_CLASS } from './policies';
import type { PeriodKind } from '../../governance/periods';

/** Spend counters per project and UTC period, and fixed-window rate-limit counters. */

export interface SpendRow {
  period_kind: PeriodKind;
  period_start: string; // YYYY-MM-DD
  reserved_micros: number;
  settled_micros: number;
  requests: number;
}

export async function readSpendRows(db: Queryable, projectId: string, keys: { kind: PeriodKind; start: string }[]): Promise<SpendRow[]> {
  if (keys.length === 0) return [];
  const { rows } = await db.query<SpendRow>(
    `SELECT period_kind, to_char(period_start, 'YYYY-MM-DD') AS period_start, reserved_micros, settled_micros, requests
       FROM spend_counters
      WHERE project_id = $1 AND (period_kind, period_start) IN (SELECT * FROM unnest($2::text[], $3::date[]))`,
    [projectId, keys.map((k) => k.kind), keys.map((k) => k.start)],
  );
  return rows;
}

/** Adds deltas to each period row (created on first use). */
export async function addToSpend(
  db: Queryable,
  projectId: string,
  keys: { kind: string; start: string }[],
  delta: { reserved?: number; settled?: number; requests?: number },
): Promise<void> {
  if (keys.length === 0) return;
  await db.query(
    `INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
     SELECT $1, k, s, $4, $5, $6 FROM unnest($2::text[], $3::date[]) AS t(k, s)
     ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
       reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
       settled_micros = spend_counters.settled_micros + EXCLUDED.settled_micros,
       requests = spend_counters.requests + EXCLUDED.requests`,
    [projectId, keys.map((k) => k.kind), keys.map((k) => k.start), delta.reserved ?? 0, delta.settled ?? 0, delta.requests ?? 0],
  );
}

export interface RateWindowKey {
  limitId: string;
  windowSeconds: number;
  windowStart: Date;
}

export async function readRateWindows(db: Queryable, projectId: string, keys: RateWindowKey[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (keys.length === 0) return out;
  const { rows } = await db.query<{ limit_id: string; window_seconds: number; used: number }>(
    `SELECT limit_id, window_seconds, used FROM rate_limit_windows
      WHERE project_id = $1 AND (limit_id, window_seconds, window_start) IN
            (SELECT * FROM unnest($2::text[], $3::int[], $4::timestamptz[]))`,
    [projectId, keys.map((k) => k.limitId), keys.map((k) => k.windowSeconds), keys.map((k) => k.windowStart)],
  );
  for (const r of rows) out.set(`${r.limit_id}|${r.window_seconds}`, Number(r.used));
  return out;
}

export async function consumeRateWindows(db: Queryable, projectId: string, items: (RateWindowKey & { amount: number })[]): Promise<void> {
  if (items.length === 0) return;
  await db.query(
    `INSERT INTO rate_limit_windows (project_id, limit_id, window_seconds, window_start, used)
     SELECT $1, l, w, s, a FROM unnest($2::text[], $3::int[], $4::timestamptz[], $5::bigint[]) AS t(l, w, s, a)
     ON CONFLICT (project_id, limit_id, window_seconds, window_start) DO UPDATE SET used = rate_limit_windows.used + EXCLUDED.used`,
    [projectId, items.map((k) => k.limitId), items.map((k) => k.windowSeconds), items.map((k) => k.windowStart), items.map((k) => k.amount)],
  );
}

/** Drops rate windows that ended before `before` (housekeeping). */
export async function purgeRateWindows(db: Queryable, before: Date): Promise<number> {
  const res = await db.query(
    "DELETE FROM rate_limit_windows WHERE window_start + make_interval(secs => window_seconds) < $1",
    [before],
  );
  return res.rowCount ?? 0;
}

/** Converts a permit's reservation to actual spend (`tollgate_settle_permit`, under the project's governance lock; idempotent). */
export async function settlePermitSpend(db: Queryable, permitId: string, actual: { costMicros: number; inputTokens: number; outputTokens: number; at: Date }): Promise<void> {
  await db.query('SELECT tollgate_settle_permit($1, $2, $3, $4, $5, $6)', [GOVERNANCE_LOCK_CLASS, permitId, actual.costMicros, actual.inputTokens, actual.outputTokens, actual.at]);
}

/** Releases a permit's active reservation (`tollgate_release_permit`); true when something was released. */
export async function releasePermitSpend(db: Queryable, permitId: string, state: 'released' | 'expired', reason: string, at: Date): Promise<boolean> {
  const { rows } = await db.query<{ ok: boolean }>('SELECT tollgate_release_permit($1, $2, $3, $4, $5) AS ok', [GOVERNANCE_LOCK_CLASS, permitId, state, reason, at]);
  return rows[0].ok;
}

export type ReadRateResult =
  | { ok: true }
  | { ok: false; limit_id: string; action: 'deny' | 'throttle'; limit: number; window_seconds: number; retry_after_seconds: number };

/** Counts one ungoverned read against the project's request rate limits (`tollgate_consume_read`, migration 0102). */
export async function consumeReadRate(db: Queryable, projectId: string, now: Date): Promise<ReadRateResult> {
  const { rows } = await db.query<{ r: ReadRateResult }>('SELECT tollgate_consume_read($1, $2, $3) AS r', [GOVERNANCE_LOCK_CLASS, projectId, now]);
  return rows[0].r;
}
