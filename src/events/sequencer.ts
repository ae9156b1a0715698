/**
 * The event-chain sequencer: every `intervalMs`, chains the pending events of every project that
 * has some, all of them in one transaction (src/db/repositories/event-chain.ts, chainEvents). Runs in
 * every API process; the per-project try-lock makes concurrent sequencers skip a project another
 * one is chaining, so each chain stays linear. Off the request path: a governed call never waits for it.
 */
import type { Db } from '../db/pool';
import { chainEvents, projectsWithUnchainedEvents } from '../db/repositories/event-chain';
import type { Logger } from '../logger';
import { startPeriodicRound } from './periodic';

export interface Sequencer {
  /** Chains everything pending now (all projects), then resolves. */
  runOnce(): Promise<number>;
  close(): Promise<void>;
}

export function startSequencer(deps: { db: Db; logger: Logger; intervalMs?: number }): Sequencer {
  const intervalMs = deps.intervalMs ?? 250;

  async function round(): Promise<number> {
    let total = 0;
    // Only a full share means a backlog. Looping until a batch comes back empty chained the calls
    // that committed meanwhile a few at a time, back to back: at one call in flight that kept the
    // sequencer running continuously, each tiny batch paying the transaction's fixed statements.
    let projects = await projectsWithUnchainedEvents(deps.db);
    while (projects.length > 0) {
      const batch = await chainAll(projects);
      total += batch.events;
      projects = batch.fullProjects;
    }
    return total;
  }

  /**
   * All projects in one transaction; if that fails, each project in its own, so a project whose
   * pending rows cannot be chained (its failure is logged every round) does not stop the chain,
   * and with it the event stream and webhook fan-out, of every other project.
   */
  async function chainAll(projects: string[]): Promise<{ events: number; fullProjects: string[] }> {
    try {
      return await chainEvents(deps.db, projects);
    } catch (err) {
      if (projects.length === 1) throw err;
      let events = 0;
      const fullProjects: string[] = [];
      for (const project of projects) {
        try {
          const r = await chainEvents(deps.db, [project]);
          events += r.events;
          fullProjects.push(...r.fullProjects);
        } catch (projectErr) {
          deps.logger.warn({ err: projectErr, project_id: project }, 'chaining a project\'s events failed; retried next round');
        }
      }
      return { events, fullProjects };
    }
  }

  return startPeriodicRound(round, { intervalMs, logger: deps.logger, failureMessage: 'event chaining round failed; retried next round' });
}
