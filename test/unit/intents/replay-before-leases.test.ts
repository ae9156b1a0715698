import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

/**
 * Runs started before call leases must replay with the current code (a worker restart after the
 * upgrade replays their histories). The fixture is the history of intentWorkflow as it was then —
 * reservations, a throttled counter write, an amendment, completion — recorded by
 * test/replay/record-intent-history-before-leases.ts.
 */
describe('intentWorkflow replays histories from before call leases', () => {
  it('replays without nondeterminism', async () => {
    const history = temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, '../../fixtures/intent-history-before-leases.binpb')));
    expect(history.events.length).toBeGreaterThan(20);
    const bundle = process.env.TEMPORAL_WORKFLOW_BUNDLE;
    if (!bundle) throw new Error('TEMPORAL_WORKFLOW_BUNDLE is set by the jest global setup');
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: bundle } }, history, 'intent:proj_fixture:before-leases')).resolves.toBeUndefined();
  });
});
