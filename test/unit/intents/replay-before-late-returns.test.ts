import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

/**
 * A run from before calls given back after their lease closed were un-counted must replay as it
 * ran: its lease holding a returned call was settled from its permits alone, and the report naming
 * a returned lease was ignored; the counter writes that followed wrote those counts. The fixture is
 * recorded by test/replay/record-intent-history-before-late-returns.ts with the workflow code of
 * that time.
 */
describe('intentWorkflow replays histories from before late give-backs were un-counted', () => {
  const history = temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, '../../fixtures/intent-history-before-late-returns.binpb')));
  const workflowId = 'intent:proj_fixture:before-late-returns';

  it('the fixture settles a lease holding a returned call, then reports a give-back on a returned lease, with no marker of late returns', () => {
    const updates = history.events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    const args = updates.map((e) => JSON.parse(Buffer.from(e.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.args!.payloads![0].data!).toString()));
    expect(args.some((a) => a.leaseId === 'lse_settled' && a.returned === 1)).toBe(true);
    const releases = args.filter((a) => a.leaseId === 'lse_returned' && a.release);
    expect(releases.map((a) => a.returned ?? 0)).toEqual([0, 1]);
    const activities = history.events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
    expect(activities).toContain('countLeasePermits');
    const patchIds = history.events
      .filter((e) => e.markerRecordedEventAttributes)
      .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!).toString()).id);
    expect(patchIds).toEqual(['intent-call-leases', 'intent-lease-returned-calls']);
  });

  it('replays without nondeterminism', async () => {
    const bundle = process.env.TEMPORAL_WORKFLOW_BUNDLE;
    if (!bundle) throw new Error('TEMPORAL_WORKFLOW_BUNDLE is set by the jest global setup');
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: bundle } }, history, workflowId)).resolves.toBeUndefined();
  });
});
