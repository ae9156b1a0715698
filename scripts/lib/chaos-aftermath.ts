/**
 * What the fault suite reads once the load is over: every accepted job to its terminal status,
 * reconciliation closing what dead processes left in flight, and the dispatches the provider saw
 * against those the records count.
 */
import type { Pool } from 'pg';
import type { EmulatorHandle } from '../../emulator/server';
import type { ChaosReport } from './chaos-report';
import { sleep, type CallResult } from './chaos-scenario';

/** Waits until every accepted job is terminal (they are durable: they finish after any fault). */
export async function awaitJobs(db: Pool, jobIds: string[]): Promise<ChaosReport['jobs']> {
  const jobStatus = new Map<string, string>();
  const jobsDeadline = Date.now() + 180_000;
  while (Date.now() < jobsDeadline && jobStatus.size < jobIds.length) {
    const { rows } = await db.query<{ id: string; status: string; error_code: string | null }>(
      "SELECT id, status, error_code FROM jobs WHERE id = ANY($1) AND status IN ('completed', 'failed', 'cancelled')",
      [jobIds],
    );
    for (const r of rows) jobStatus.set(r.id, r.error_code ? `${r.status} (${r.error_code})` : r.status);
    if (jobStatus.size < jobIds.length) await sleep(1000);
  }
  const byStatus: Record<string, number> = {};
  for (const s of jobStatus.values()) byStatus[s] = (byStatus[s] ?? 0) + 1;
  return { submitted: jobIds.length, terminal: jobStatus.size, byStatus };
}

/** Reconciliation closes what dead processes left in flight (deadline + one 10 s round): waits for it. */
export async function awaitSettled(db: Pool, projectId: string): Promise<Pick<ChaosReport, 'settledAfterSeconds' | 'inflightRowsLeft' | 'reservationsHeld'>> {
  const loadEnded = Date.now();
  let settledAfterSeconds: number | null = null;
  let inflightRowsLeft = -1;
  let reservationsHeld = -1;
  while (Date.now() - loadEnded < 120_000) {
    inflightRowsLeft = Number((await db.query('SELECT count(*) AS n FROM permits WHERE project_id = $1 AND closing IS NOT NULL', [projectId])).rows[0].n);
    reservationsHeld = Number((await db.query("SELECT count(*) AS n FROM permits WHERE project_id = $1 AND reservation_state = 'active'", [projectId])).rows[0].n);
    if (inflightRowsLeft === 0 && reservationsHeld === 0) {
      settledAfterSeconds = Math.round((Date.now() - loadEnded) / 1000);
      break;
    }
    await sleep(1000);
  }
  return { settledAfterSeconds, inflightRowsLeft, reservationsHeld };
}

/** The provider requests the emulator received, and the calls (by nonce) it saw more than once. */
export function emulatorDispatches(emu: EmulatorHandle, results: CallResult[]): Pick<ChaosReport, 'doubleDispatches' | 'dispatchedByEmulator'> {
  const counts = new Map<string, number>();
  for (const r of emu.received()) {
    const m = /chaos ([\w-]+)/.exec(JSON.stringify(r.body));
    if (m) counts.set(m[1], (counts.get(m[1]) ?? 0) + 1);
  }
  const kindOf = new Map(results.map((r) => [r.nonce, r.kind]));
  const doubleDispatches = [...counts].filter(([, n]) => n > 1).map(([nonce, n]) => `${nonce} (${kindOf.get(nonce) ?? 'probe'}) ×${n}`);
  return { doubleDispatches, dispatchedByEmulator: [...counts.values()].reduce((a, b) => a + b, 0) };
}

/**
 * provider.request_sent as the timeline has it (src/executions/lifecycle-events.ts): stored rows; per
 * record, one per provider try (at least its first, for an interrupted call) plus one per later
 * job attempt, less the tries a job attempt began (its request_sent is the attempt's); one per
 * pipeline call in flight; one per started attempt of a job not yet recorded.
 */
export async function recordedDispatches(db: Pool, projectId: string): Promise<number> {
  return Number(
    (
      await db.query(
        `SELECT (SELECT count(*) FROM events WHERE project_id = $1 AND event_type = 'provider.request_sent')
              + (SELECT coalesce(sum(greatest(jsonb_array_length(lifecycle->'attempts'), 1)
                      + coalesce(jsonb_array_length(lifecycle->'job_attempts'), 0)
                      - (SELECT count(DISTINCT (j->>2)::int) FROM jsonb_array_elements(coalesce(lifecycle->'job_attempts', '[]'::jsonb)) j
                          WHERE (j->>2)::int BETWEEN 1 AND jsonb_array_length(lifecycle->'attempts') - 1)), 0)
                   FROM calls WHERE project_id = $1 AND lifecycle IS NOT NULL)
              + (SELECT count(*) FROM permits WHERE project_id = $1 AND closing IS NOT NULL)
              + (SELECT count(*) FROM jobs j, jsonb_object_keys(j.dispatch->'attempts') k
                  WHERE j.project_id = $1 AND j.dispatch IS NOT NULL AND NOT EXISTS (SELECT 1 FROM calls e WHERE e.id = j.request_id)) AS n`,
        [projectId],
      )
    ).rows[0].n,
  );
}
