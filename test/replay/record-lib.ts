/**
 * Records the history of a workflow as it was at an earlier commit (for replay fixtures): bundles
 * the given workflow files from `git show <ref>:<file>`, runs them on a private Temporal dev server
 * with stand-in activities (their results land in the history as recorded), lets `drive` exercise
 * the run and writes the history as binary protobuf (the JSON converter of this SDK install trips
 * over two protobufjs copies).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal as temporal_ } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { ensureTemporalCli } from '../../scripts/lib/temporal-cli';
import { freePort, startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';

export const ROOT = path.resolve(__dirname, '..', '..');

export interface RecordSpec {
  /** Git revision whose workflow code runs. */
  ref: string;
  /** Files (repository paths) the bundle needs; workflows/index.ts exporting `exports` is written. */
  files: string[];
  exports: string;
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  taskQueue: string;
  /** Exercises the run and returns its history (`handle.fetchHistory()`). */
  drive(client: Client, taskQueue: string): Promise<temporal_.api.history.v1.IHistory>;
  /** Output path, relative to the repository root (or absolute). */
  out: string;
}

export async function recordHistory(spec: RecordSpec): Promise<void> {
  // Inside the repository, so the bundler resolves @temporalio/* from its node_modules.
  fs.mkdirSync(path.join(ROOT, '.data'), { recursive: true });
  const dir = fs.mkdtempSync(path.join(ROOT, '.data', 'replay-record-'));
  for (const f of spec.files) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), execFileSync('git', ['show', `${spec.ref}:${f}`], { cwd: ROOT }));
  }
  fs.mkdirSync(path.join(dir, 'workflows'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'workflows/index.ts'), `${spec.exports}\n`);
  const { code } = await bundleWorkflowCode({ workflowsPath: path.join(dir, 'workflows/index.ts') });

  const cli = await ensureTemporalCli((m) => process.stdout.write(`${m}\n`));
  const temporal = await startTemporalDevServer({ cli, port: await freePort(), logFile: fs.createWriteStream(path.join(dir, 'temporal.log')) });
  try {
    const worker = await Worker.create({
      connection: await NativeConnection.connect({ address: temporal.address }),
      taskQueue: spec.taskQueue,
      workflowBundle: { code },
      activities: spec.activities,
    });
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    const history = await worker.runUntil(() => spec.drive(client, spec.taskQueue));
    const out = path.resolve(ROOT, spec.out);
    fs.writeFileSync(out, temporal_.api.history.v1.History.encode(history).finish());
    process.stdout.write(`wrote ${out} (${history.events?.length} events)\n`);
  } finally {
    await temporal.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
