/**
 * Records the fixture test/fixtures/intent-history-before-leases.binpb (run once, by hand):
 *   npx tsx test/replay/record-intent-history-before-leases.ts [out-path]
 *
 * Runs intentWorkflow as it was before call leases (git f6d1c4b~1) with stand-in activities,
 * drives reservations, an amendment, the counter writes and completion, and writes the history.
 * test/unit/intents/replay-before-leases.test.ts replays it with the current workflow code.
 */
import { recordHistory } from './record-lib';

const BEFORE = 'f6d1c4b~1';
const amendment = { id: 'wam_fixture', applied_against_version: 1, previous_expected_calls: null, new_expected_calls: null, previous_max_calls: 10, new_max_calls: 12, reason_provided: null, amendment_signature_b64: 'c2ln', created_at: '2026-01-01T00:00:00.000Z' };

recordHistory({
  ref: BEFORE,
  files: ['workflows/intent.ts', 'workflows/intent-messages.ts', 'workflows/search-attributes.ts'],
  exports: "export { intentWorkflow } from './intent';",
  taskQueue: 'record-before-leases',
  out: process.argv[2] ?? 'test/fixtures/intent-history-before-leases.binpb',
  activities: {
    recordIntentAmendment: async () => ({ amendment, projected_cost: { amount_micros: null } }),
    completeIntent: async (i: { workflowId: string; cachedActualCalls: number }) => ({
      workflow_id: i.workflowId, status: 'completed', version: 2, actual_calls: i.cachedActualCalls, expected_calls: null, max_calls: 12,
      completed_at: '2026-01-01T00:00:05.000Z',
      reconciliation: { authoritative_actual_calls: i.cachedActualCalls, cached_actual_calls: i.cachedActualCalls, counter_divergence_detected: false },
    }),
    expireIntent: async () => undefined,
    persistIntentCounter: async () => undefined,
  },
  drive: async (client, taskQueue) => {
    const handle = await client.workflow.start('intentWorkflow', {
      workflowId: 'intent:proj_fixture:before-leases',
      taskQueue,
      args: [{ state: { projectId: 'proj_fixture', workflowId: 'before-leases', status: 'active', version: 1, expectedCalls: null, maxCalls: 10, actualCalls: 0, expiresAtMs: null, projection: {}, run: 1, totalUpdatesHandled: 0 } }],
    });
    for (let i = 0; i < 4; i++) await handle.executeUpdate('reserveCalls', { args: [2] });
    await new Promise((r) => setTimeout(r, 1500)); // a throttled counter write
    await handle.executeUpdate('amend', { args: [{ amendmentId: 'wam_fixture', ifMatchVersion: 1, newMaxCalls: 12 }] });
    await handle.executeUpdate('reserveCalls', { args: [5] });
    await handle.executeUpdate('complete', { args: [{}] });
    await handle.result();
    return handle.fetchHistory();
  },
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
