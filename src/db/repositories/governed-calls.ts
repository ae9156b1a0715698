/**
 * The governed-call pipeline's two statements, in their batch form: `tollgate_begin_calls` before
 * dispatch, `tollgate_finish_calls` after (introduced in migration 0100; their current bodies are in
 * migrations 0113 and 0114: each later migration replaces a function whole). Callers batch through
 * src/pipeline/batcher.ts; the items are plain JSON (see the migration for their fields).
 *
 * Both are named (prepared once per connection): at one call in flight, parsing and planning them
 * on every call cost ~0.1 ms each (docs/performance.md). A migration that changed either function's
 * result type would need the processes restarted (PostgreSQL refuses a prepared statement whose
 * result type changed); migrations are applied before the processes start.
 */
import type { Queryable } from '../pool';
import { GOVERNANCE_LOCK_CLASS } from './policies';

export type BeginResult = 'applied' | 'exists' | 'stale';

/** Applies optimistic allows in order; per call: applied, exists (permit id taken) or stale (nothing written). */
export async function beginCalls(db: Queryable, items: Record<string, unknown>[]): Promise<BeginResult[]> {
  const { rows } = await db.query<{ r: BeginResult[] }>({ name: 'tollgate_begin_calls', text: 'SELECT tollgate_begin_calls($1, $2::jsonb) AS r', values: [GOVERNANCE_LOCK_CLASS, JSON.stringify(items)] });
  return rows[0].r;
}

/**
 * Records finished calls in order; per call: true when recorded now, false when its row already
 * existed. The batch commits asynchronously (synchronous_commit off for this transaction only)
 * when every item allows it (`sync: false`): see docs/decisions/recording-commit.md.
 */
export async function finishCalls(db: Queryable, items: Record<string, unknown>[]): Promise<boolean[]> {
  const sync = items.some((i) => i.sync !== false);
  const { rows } = await db.query<{ r: boolean[] }>({
    name: sync ? 'tollgate_finish_calls' : 'tollgate_finish_calls_async',
    text: sync ? 'SELECT tollgate_finish_calls($1, $2::jsonb) AS r' : "SELECT set_config('synchronous_commit', 'off', true), tollgate_finish_calls($1, $2::jsonb) AS r",
    values: [GOVERNANCE_LOCK_CLASS, JSON.stringify(items)],
  });
  return rows[0].r;
}
