/**
 * The short version of `npm run chaos` (scripts/lib/chaos.ts): every fault once, with light load
 * (a fifth of the calls joined to an intent whose ceiling the load passes), on its own
 * PostgreSQL cluster and Temporal dev server (the suite restarts both, so it cannot share the
 * run's). The full run and its figures: docs/reliability.md.
 */
import os from 'node:os';
import path from 'node:path';
import { runChaos } from '../../scripts/lib/chaos';
import { chaosFailures, chaosMarkdown } from '../../scripts/lib/chaos-report';
import { SCENARIOS } from '../../scripts/lib/chaos-scenario';

describe('chaos (short)', () => {
  it('survives SIGKILLed API and worker processes and Temporal and PostgreSQL restarts under load', async () => {
    const cli = process.env.TEMPORAL_CLI_PATH;
    if (!cli) throw new Error('TEMPORAL_CLI_PATH is set by the jest global setup');
    const report = await runChaos({
      scenarios: SCENARIOS,
      concurrency: 4,
      loadMs: 4000,
      cli,
      bundlePath: process.env.TEMPORAL_WORKFLOW_BUNDLE,
      dir: path.join(os.tmpdir(), `tollgate-chaos-${process.pid}`),
      log: () => undefined,
    });
    process.stdout.write(`${chaosMarkdown(report)}\n`);
    for (const s of report.scenarios) {
      expect(s.calls).toBeGreaterThan(0);
      // Calls succeed again after each fault.
      expect(s.recoveryMs).not.toBeNull();
    }
    // The load passed the intent's ceiling, so the ceiling was tested while processes died.
    expect(report.intent.refusedAtCeiling).toBeGreaterThan(0);
    expect(chaosFailures(report)).toEqual([]);
  }, 600_000);
});
