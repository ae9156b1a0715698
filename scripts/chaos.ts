/**
 * `npm run chaos`: the fault suite (scripts/lib/chaos.ts) at full length, printing the figures
 * docs/reliability.md quotes. CHAOS_CONCURRENCY (default 16), CHAOS_LOAD_MS per scenario (default
 * 12000), CHAOS_SCENARIOS (comma-separated subset of kill-api, kill-worker, restart-temporal,
 * restart-postgres). Exit code 1 when a check fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runChaos } from './lib/chaos';
import { chaosFailures, chaosMarkdown } from './lib/chaos-report';
import { SCENARIOS, type Scenario } from './lib/chaos-scenario';
import { ensureTemporalCli } from './lib/temporal-cli';
import { bundleWorkflows } from '../src/temporal/worker';

async function main(): Promise<void> {
  const log = (m: string) => console.log(m);
  const scenarios = (process.env.CHAOS_SCENARIOS?.split(',') ?? [...SCENARIOS]) as Scenario[];
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}; one of ${SCENARIOS.join(', ')}`);
  const cli = await ensureTemporalCli(log);
  const bundlePath = path.join(os.tmpdir(), `tollgate-chaos-workflows-${process.pid}.js`);
  fs.writeFileSync(bundlePath, await bundleWorkflows());
  const started = Date.now();
  const report = await runChaos({
    scenarios,
    concurrency: Number(process.env.CHAOS_CONCURRENCY ?? 16),
    loadMs: Number(process.env.CHAOS_LOAD_MS ?? 12_000),
    cli,
    bundlePath,
    dir: path.resolve(__dirname, '..', '.data', 'chaos'),
    log,
  });
  console.log(`\n${chaosMarkdown(report)}\n\n(${Math.round((Date.now() - started) / 1000)} s)`);
  const failures = chaosFailures(report);
  if (failures.length) {
    console.error(`\nchecks failed:\n- ${failures.join('\n- ')}`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
