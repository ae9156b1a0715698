import { Queryable } from '../pool';
import { GOVERNANCE_LOCK_CLASS } from './policies';
import type { PeriodKind } from '../../governance/periods';

/** Spend counters per project and UTC period, and sliding-window rate-limit counts. */

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

/** A rate limit as the sliding-window functions take it (migration 0105). */
export interface RateLimitKey {
  limitId: string;
  windowSeconds: number;
}

export interface RateUsage {
  used: number;
  /** Seconds until a call of the amount asked about fits (0: it fits now). */
  retryAfterSeconds: number;
}

/**
 * Each limit's used capacity in its sliding window and the wait for `amount`, on the database
 * clock (`tollgate_rate_usage`). Keyed `${limitId}|${windowSeconds}`. Read under the project's lock
 * on the locked path.
 */
export async function readRateUsage(db: Queryable, projectId: string, limits: (RateLimitKey & { limit: number; amount: number })[]): Promise<Map<string, RateUsage>> {
  const out = new Map<string, RateUsage>();
  if (limits.length === 0) return out;
  const { rows } = await db.query<{ r: { limit_id: string; window_seconds: number; used: number; retry_after_seconds: number }[] }>(
    'SELECT tollgate_rate_usage($1, $2) AS r',
    [projectId, JSON.stringify(limits.map((l) => ({ limit_id: l.limitId, window_seconds: l.windowSeconds, limit: l.limit, amount: l.amount })))],
  );
  for (const r of rows[0].r) out.set(`${r.limit_id}|${r.window_seconds}`, { used: Number(r.used), retryAfterSeconds: r.retry_after_seconds });
  return out;
}

/** Counts a call in its limits' sliding windows at the database clock (`tollgate_consume_rates`; after readRateUsage, under the same lock). */
export async function consumeRates(db: Queryable, projectId: string, items: (RateLimitKey & { amount: number })[]): Promise<void> {
  if (items.length === 0) return;
  await db.query('SELECT tollgate_consume_rates($1, $2)', [
    projectId,
    JSON.stringify(items.map((i) => ({ limit_id: i.limitId, window_seconds: i.windowSeconds, amount: i.amount }))),
  ]);
}

/** Drops rate-limit counts that left their window (housekeeping, database clock). */
export async function purgeRateEvents(db: Queryable): Promise<number> {
  const res = await db.query('DELETE FROM rate_limit_events WHERE at <= now() - make_interval(secs => window_seconds)');
  return res.rowCount ?? 0;
}

/** Converts a permit's reservation to actual spend (`tollgate_settle_permit`, under the project's governance lock; idempotent). */
export async function settlePermitSpend(db: Queryable, permitId: string, actual: { costMicros: number; inputTokens: number; outputTokens: number; at: Date }): Promise<void> {
  await db.query('SELECT tollgate_settle_permit($1, $2, $3, $4, $5, $6)', [GOVERNANCE_LOCK_CLASS, permitId, actual.costMicros, actual.inputTokens, actual.outputTokens, actual.at]);
}

/** Releases a permit's active reservation (`tollgate_release_permit`); true when something was released. */
export async function releasePermitSpend(db: Queryable, permitId: string, r: { state: 'released' | 'expired'; reason: string; at: Date }): Promise<boolean> {
  const { rows } = await db.query<{ ok: boolean }>('SELECT tollgate_release_permit($1, $2, $3, $4, $5) AS ok', [GOVERNANCE_LOCK_CLASS, permitId, r.state, r.reason, r.at]);
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
