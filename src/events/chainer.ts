/**
 * The event-chain sequencer: every `intervalMs`, chains the pending events of every project that
 * has some, all of them in one transaction (src/db/repositories/events.ts, chainEvents). Runs in
 * every API process; the per-project try-lock makes concurrent sequencers skip a project another
 * one is chaining, so each chain stays linear. Off the request path: a governed call never waits for it.
 */
import type { Db } from '../db/pool';
import { chainEvents, projectsWithUnchainedEvents } from '../db/repositories/events';
import type { Logger } from '../logger';
import { startPeriodicRound } from './periodic';

export interface EventChainer {
  /** Chains everything pending now (all projects), then resolves. */
  runOnce(): Promise<number>;
  close(): Promise<void>;
}

export function startEventChainer(deps: { db: Db; logger: Logger; intervalMs?: number }): EventChainer {
  const intervalMs = deps.intervalMs ?? 250;

  async function round(): Promise<number> {
    let total = 0;
    // Only a full share means a backlog. Looping until a batch comes back empty chained the calls
    // that committed meanwhile a few at a time, back to back: at one call in flight that kept the
    // sequencer running continuously, each tiny batch paying the transaction's fixed statements.
    let projects = await projectsWithUnchainedEvents(deps.db);
    while (projects.length > 0) {
      const batch = await chainEvents(deps.db, projects);
      total += batch.events;
      projects = batch.fullProjects;
    }
    return total;
  }

  return startPeriodicRound(round, { intervalMs, logger: deps.logger, failureMessage: 'event chaining round failed; retried next round' });
}
