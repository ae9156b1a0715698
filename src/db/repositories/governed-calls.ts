/**
 * The governed-call pipeline's two statements, in their batch form: `tollgate_govern_calls` before
 * dispatch, `tollgate_record_calls` after (their texts: src/db/functions/<name>.sql). Callers batch
 * through src/pipeline/batcher.ts; the items are plain JSON (see the function files for their fields).
 *
 * Both are named (prepared once per connection): at one call in flight, parsing and planning them
 * on every call costs planning time (docs/performance.md). A change to either function's
 * result type would need the processes restarted (PostgreSQL refuses a prepared statement whose
 * result type changed); migrations are applied before the processes start.
 */
import type { Queryable } from '../pool';
import { GOVERNANCE_LOCK_CLASS } from './policies';

export type GovernCallResult = 'applied' | 'exists' | 'stale';

/** Applies optimistic allows in order; per call: applied, exists (permit id taken) or stale (nothing written). */
export async function governCalls(db: Queryable, items: Record<string, unknown>[]): Promise<GovernCallResult[]> {
  const { rows } = await db.query<{ r: GovernCallResult[] }>({ name: 'tollgate_govern_calls', text: 'SELECT tollgate_govern_calls($1, $2::jsonb) AS r', values: [GOVERNANCE_LOCK_CLASS, JSON.stringify(items)] });
  return rows[0].r;
}

/**
 * Records finished calls in order; per call: true when recorded now, false when its row already
 * existed. The batch commits asynchronously (synchronous_commit off for this transaction only)
 * when every item allows it (`sync: false`): see docs/decisions/recording-commit.md.
 */
export async function recordCalls(db: Queryable, items: Record<string, unknown>[]): Promise<boolean[]> {
  const sync = items.some((i) => i.sync !== false);
  const { rows } = await db.query<{ r: boolean[] }>({
    name: sync ? 'tollgate_record_calls' : 'tollgate_record_calls_async',
    text: sync ? 'SELECT tollgate_record_calls($1, $2::jsonb) AS r' : "SELECT set_config('synchronous_commit', 'off', true), tollgate_record_calls($1, $2::jsonb) AS r",
    values: [GOVERNANCE_LOCK_CLASS, JSON.stringify(items)],
  });
  return rows[0].r;
}
