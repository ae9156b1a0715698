/**
 * Records the fixture test/fixtures/intent-history-before-returned.binpb (run once, by hand):
 *   npx tsx test/replay/record-intent-history-before-returned.ts [out-path]
 *
 * Runs intentWorkflow as it was before lease reports carried calls given back (`returned`,
 * docs/decisions/call-leases.md) while a holder already sends them: that code ignored them, so the
 * call stays counted, and no counter write follows where the current code, had it no patch, would
 * write one (the replay test fails without the patch).
 * test/unit/intents/replay-before-returned.test.ts replays it with the current workflow code, which
 * must ignore them there too.
 */
import { recordHistory } from './record-lib';

/** The last commit whose intentWorkflow ignored LeaseArgs.returned. */
const BEFORE = 'f15c9b3';
const WORKFLOW_ID = 'intent:proj_fixture:before-returned';

recordHistory({
  ref: BEFORE,
  files: ['workflows/intent.ts', 'workflows/intent-messages.ts', 'workflows/intent-leases.ts', 'workflows/intent-state.ts', 'workflows/search-attributes.ts'],
  exports: "export { intentWorkflow } from './intent';",
  taskQueue: 'record-before-returned',
  out: process.argv[2] ?? 'test/fixtures/intent-history-before-returned.binpb',
  activities: {
    recordIntentAmendment: async () => ({ amendment: {}, projected_cost: {} }),
    completeIntent: async (i: { workflowId: string; cachedActualCalls: number }) => ({
      workflow_id: i.workflowId, status: 'completed', version: 1, actual_calls: i.cachedActualCalls, expected_calls: null, max_calls: 5,
      completed_at: '2026-01-01T00:00:05.000Z',
      reconciliation: { authoritative_actual_calls: i.cachedActualCalls, cached_actual_calls: i.cachedActualCalls, counter_divergence_detected: false },
    }),
    expireIntent: async () => undefined,
    persistIntentCounter: async () => undefined,
    notifyLeaseHolders: async () => undefined,
    countLeasePermits: async () => ({}),
  },
  drive: async (client, taskQueue) => {
    const handle = await client.workflow.start('intentWorkflow', {
      workflowId: WORKFLOW_ID,
      taskQueue,
      args: [{ state: { projectId: 'proj_fixture', workflowId: 'before-returned', status: 'active', version: 1, expectedCalls: null, maxCalls: 5, actualCalls: 0, expiresAtMs: null, projection: {}, run: 1, totalUpdatesHandled: 0, leases: {} } }],
    });
    const lease = { leaseId: 'lse_fixture', holder: 'fixture' };
    await handle.executeUpdate('leaseCalls', { args: [{ ...lease, used: 0, need: 2, want: 2 }] });
    await handle.executeUpdate('leaseCalls', { args: [{ ...lease, used: 2, need: 0, want: 0 }] });
    // The second call's governance failed after its report: a newer holder tells it as returned.
    await handle.executeUpdate('leaseCalls', { args: [{ ...lease, used: 2, returned: 1, need: 0, want: 0 }] });
    // Past the counter-write throttle, a second lease wakes the main loop: had the returned call
    // been subtracted, the counter would differ from the one written and a write would follow.
    await new Promise((r) => setTimeout(r, 1500));
    const second = { leaseId: 'lse_fixture_2', holder: 'fixture-2' };
    await handle.executeUpdate('leaseCalls', { args: [{ ...second, used: 0, need: 1, want: 1 }] });
    await handle.executeUpdate('leaseCalls', { args: [{ ...second, used: 1, need: 0, want: 0, release: true }] });
    await handle.executeUpdate('leaseCalls', { args: [{ ...lease, used: 2, returned: 1, need: 0, want: 0, release: true }] });
    await handle.executeUpdate('complete', { args: [{}] });
    await handle.result();
    return handle.fetchHistory();
  },
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
