/**
 * Reconciliation closes governed calls whose process died: their permits still carry the in-flight
 * mark past the dispatch deadline. One call that cannot be closed (here a mark without what
 * closing needs) is logged and left; the calls after it are closed all the same.
 */
import { createGovernedCallActivities } from '../../../activities/governed-call';
import { createReconciliationActivities } from '../../../activities/reconciliation';
import { callInput, instantProvider } from '../../../bench/lib/governed-calls';
import { fixedClock, systemClock } from '../../../src/clock';
import { findCallRecordById } from '../../../src/db/repositories/call-records';
import { insertPermit, type PermitRecord } from '../../../src/db/repositories/permits';
import { createGovernance } from '../../../src/governance';
import type { Logger } from '../../../src/logger';
import { createLogger } from '../../../src/logger';
import { pricing } from '../../../src/pricing';
import { testConfig } from '../../support/tollgate';
import { ownDatabasePool } from '../../support/own-database';
import { projectWithPolicy } from '../../unit/governance/helpers';

describe('reconciliation of interrupted calls (real PostgreSQL)', () => {
  // A database of its own: the servers of other test files reconcile the shared one.
  const own = ownDatabasePool('reconciliation');

  it('closes every overdue call, past one whose mark cannot be closed', async () => {
    const { db } = own;
    const projectId = await projectWithPolicy(db, {});
    const governance = createGovernance({ db, clock: systemClock });
    const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('warn'), governance, pricing, providers: instantProvider(), recordCommit: 'sync' });
    // A mark written earlier, with a deadline long past and nothing closing needs: the oldest overdue one.
    await insertPermit(db, {
      id: `permit_broken_${Date.now()}`, project_id: projectId, route: 'executions', decision: 'allow', reason_code: 'policy.active_policy_candidate',
      display_reason: 'allowed', decision_details: {} as PermitRecord['decision_details'], actions: [], issued_at: new Date('2026-01-01T00:00:00Z'),
      closing: { input: { executionId: 'exec_req_broken' } }, dispatch_deadline: new Date('2026-01-01T00:01:00Z'),
    });
    // Two calls governed in process and never recorded, as when their process is killed mid-dispatch.
    const started = [callInput(projectId), callInput(projectId)];
    for (const c of started) {
      const gov = await calls.govern({ input: c.input, request: c.request, route: 'executions', inspectableText: [c.prompt], permitMetadata: {}, inProcess: {} });
      expect(gov.decision).toBe('allow');
    }
    const marked = await db.query('SELECT id FROM permits WHERE project_id = $1 AND closing IS NOT NULL', [projectId]);
    expect(marked.rowCount).toBe(3);

    const errors: unknown[] = [];
    const logger = { ...createLogger('silent'), error: (o: unknown) => errors.push(o), warn: () => undefined } as unknown as Logger;
    // Past the calls' dispatch deadline (60 s).
    const clock = fixedClock(new Date(Date.now() + 120_000));
    const reconcile = createReconciliationActivities({ db, config: testConfig(), clock, logger, providers: instantProvider(), pricing, governance });
    await expect(reconcile.closeInterruptedCalls()).resolves.toBe(2);

    for (const c of started) {
      const record = await findCallRecordById(db, c.input.executionId);
      expect(record?.envelope).toMatchObject({ status: 'failed', status_code: 502, error: { code: 'dispatch_interrupted' } });
    }
    expect(errors).toEqual([expect.objectContaining({ permitId: expect.stringMatching(/^permit_broken_/) })]);
    const left = await db.query<{ id: string }>('SELECT id FROM permits WHERE project_id = $1 AND closing IS NOT NULL', [projectId]);
    expect(left.rows.map((r) => r.id)).toEqual([expect.stringMatching(/^permit_broken_/)]);
  });
});
