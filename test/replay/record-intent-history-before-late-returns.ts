/**
 * Records the fixture test/fixtures/intent-history-before-late-returns.binpb (run once, by hand):
 *   npx tsx test/replay/record-intent-history-before-late-returns.ts [out-path]
 *
 * Runs intentWorkflow as it was before calls given back after their lease closed were un-counted
 * (docs/decisions/call-leases.md): a lease holding a returned call is settled from its permits
 * alone, and a report naming a returned lease is ignored. Each is followed by a counter write the
 * current code, had it no patch, would write differently (the replay test fails without it).
 * test/unit/intents/replay-before-late-returns.test.ts replays it with the current workflow code.
 */
import type { Client } from '@temporalio/client';
import { recordHistory } from './record-lib';

/** The last commit whose intentWorkflow ignored reports naming a closed lease. */
const BEFORE = 'b70e972';
const WORKFLOW_ID = 'intent:proj_fixture:before-late-returns';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function drive(client: Client, taskQueue: string) {
  const handle = await client.workflow.start('intentWorkflow', {
    workflowId: WORKFLOW_ID,
    taskQueue,
    args: [{ state: { projectId: 'proj_fixture', workflowId: 'before-late-returns', status: 'active', version: 1, expectedCalls: null, maxCalls: 10, actualCalls: 0, expiresAtMs: null, projection: {}, run: 1, totalUpdatesHandled: 0, leases: {} } }],
  });
  const lease = (leaseId: string, rest: Record<string, unknown>) => handle.executeUpdate('leaseCalls', { args: [{ leaseId, holder: 'fixture', need: 0, want: 0, ...rest }] });
  // A holder reports two calls, one given back, then goes silent: settled from its two permits.
  await lease('lse_settled', { used: 0, need: 3, want: 3 });
  await lease('lse_settled', { used: 2 });
  await lease('lse_settled', { used: 2, returned: 1 });
  for (let i = 0; i < 100; i++) {
    const s = (await handle.query('state')) as { leases: Record<string, unknown> };
    if (Object.keys(s.leases).length === 0) break;
    await sleep(200);
  }
  // A lease returned with two calls, one of them given back after the return.
  await sleep(1500);
  await lease('lse_returned', { used: 0, need: 2, want: 2 });
  await lease('lse_returned', { used: 2, release: true });
  await sleep(1500);
  await lease('lse_returned', { used: 2, returned: 1, release: true });
  await sleep(1500);
  await handle.executeUpdate('complete', { args: [{}] });
  await handle.result();
  return handle.fetchHistory();
}

recordHistory({
  ref: BEFORE,
  files: ['workflows/intent.ts', 'workflows/intent-messages.ts', 'workflows/intent-leases.ts', 'workflows/intent-state.ts', 'workflows/search-attributes.ts'],
  exports: "export { intentWorkflow } from './intent';",
  taskQueue: 'record-before-late-returns',
  out: process.argv[2] ?? 'test/fixtures/intent-history-before-late-returns.binpb',
  activities: {
    recordIntentAmendment: async () => ({ amendment: {}, projected_cost: {} }),
    completeIntent: async (i: { workflowId: string; cachedActualCalls: number }) => ({
      workflow_id: i.workflowId, status: 'completed', version: 1, actual_calls: i.cachedActualCalls, expected_calls: null, max_calls: 10,
      completed_at: '2026-01-01T00:00:05.000Z',
      reconciliation: { authoritative_actual_calls: i.cachedActualCalls, cached_actual_calls: i.cachedActualCalls, counter_divergence_detected: false },
    }),
    expireIntent: async () => undefined,
    persistIntentCounter: async () => undefined,
    notifyLeaseHolders: async () => undefined,
    // The settled lease's two permits: the call reported and kept, and one taken after the last report.
    countLeasePermits: async () => ({ lse_settled: 2 }),
  },
  drive,
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
