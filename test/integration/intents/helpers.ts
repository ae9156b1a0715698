import { startTestTollgate } from '../../support/tollgate';

export type TestTollgate = Awaited<ReturnType<typeof startTestTollgate>>;

export async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Inserts `n` permit rows for a workflow (what the governed-execution path writes per allowed call). */
export async function insertPermits(db: TestTollgate['db'], projectId: string, workflowId: string, n: number, decision = 'allow'): Promise<void> {
  for (let i = 0; i < n; i++) {
    await db.query(
      `INSERT INTO permits (id, project_id, route, workflow_id, decision, reason_code, display_reason, decision_details, issued_at)
       VALUES ($1, $2, 'executions', $3, $4, 'policy.active_policy_candidate', 'test', '{}'::jsonb, now())`,
      [`permit_test_${projectId}_${workflowId}_${decision}_${i}`, projectId, workflowId, decision],
    );
  }
}
