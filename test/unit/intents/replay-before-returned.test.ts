import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

/**
 * A run whose lease reports carried calls given back (`returned`) before the workflow subtracted
 * them must replay as it ran: those reports were ignored, and the counter write that followed
 * wrote the unreduced count. The fixture is recorded by
 * test/replay/record-intent-history-before-returned.ts with the workflow code of that time.
 */
describe('intentWorkflow replays histories from before returned calls were subtracted', () => {
  const history = temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, '../../fixtures/intent-history-before-returned.binpb')));

  it('the fixture has a report with returned calls and no patch marker', () => {
    const updates = history.events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    const payloads = updates.map((e) => Buffer.from(e.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.args!.payloads![0].data!).toString());
    expect(payloads.some((p) => JSON.parse(p).returned === 1)).toBe(true);
    // Earlier patches' markers are there; not the one of returned calls.
    const patchIds = history.events
      .filter((e) => e.markerRecordedEventAttributes)
      .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!).toString()).id);
    expect(patchIds).toEqual(['intent-call-leases']);
  });

  it('replays without nondeterminism', async () => {
    const bundle = process.env.TEMPORAL_WORKFLOW_BUNDLE;
    if (!bundle) throw new Error('TEMPORAL_WORKFLOW_BUNDLE is set by the jest global setup');
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: bundle } }, history, 'intent:proj_fixture:before-returned')).resolves.toBeUndefined();
  });
});
