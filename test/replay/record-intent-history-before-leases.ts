/**
 * Records the fixture test/fixtures/intent-history-before-leases.binpb (run once, by hand):
 *   npx tsx test/replay/record-intent-history-before-leases.ts
 *
 * Bundles intentWorkflow as it was before call leases (git f6d1c4b~1), runs it on a private
 * Temporal dev server with stand-in activities (their results land in the history as recorded),
 * drives reservations, an amendment, the counter writes and completion, and writes the history.
 * test/unit/intents/replay-before-leases.test.ts replays it with the current workflow code.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal as temporal_ } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { ensureTemporalCli } from '../../scripts/lib/temporal-cli';
import { freePort, startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';

const BEFORE = 'f6d1c4b~1';
const ROOT = path.resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  // Inside the repository, so the bundler resolves @temporalio/* from its node_modules.
  fs.mkdirSync(path.join(ROOT, '.data'), { recursive: true });
  const dir = fs.mkdtempSync(path.join(ROOT, '.data', 'intent-before-leases-'));
  fs.mkdirSync(path.join(dir, 'workflows'));
  for (const f of ['workflows/intent.ts', 'workflows/intent-messages.ts', 'workflows/search-attributes.ts']) {
    fs.writeFileSync(path.join(dir, f), execFileSync('git', ['show', `${BEFORE}:${f}`], { cwd: ROOT }));
  }
  fs.writeFileSync(path.join(dir, 'workflows/index.ts'), "export { intentWorkflow } from './intent';\n");
  const { code } = await bundleWorkflowCode({ workflowsPath: path.join(dir, 'workflows/index.ts') });

  const cli = await ensureTemporalCli((m) => process.stdout.write(`${m}\n`));
  const temporal = await startTemporalDevServer({ cli, port: await freePort(), logFile: fs.createWriteStream(path.join(dir, 'temporal.log')) });
  try {
    const taskQueue = 'record-before-leases';
    const amendment = { id: 'wam_fixture', applied_against_version: 1, previous_expected_calls: null, new_expected_calls: null, previous_max_calls: 10, new_max_calls: 12, reason_provided: null, amendment_signature_b64: 'c2ln', created_at: '2026-01-01T00:00:00.000Z' };
    const worker = await Worker.create({
      connection: await NativeConnection.connect({ address: temporal.address }),
      taskQueue,
      workflowBundle: { code },
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
    });
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    const history = await worker.runUntil(async () => {
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
    });
    // Binary protobuf (the JSON converter of this SDK install trips over two protobufjs copies).
    const out = path.join(ROOT, 'test/fixtures/intent-history-before-leases.binpb');
    fs.writeFileSync(out, temporal_.api.history.v1.History.encode(history).finish());
    process.stdout.write(`wrote ${out} (${history.events?.length} events)\n`);
  } finally {
    await temporal.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
