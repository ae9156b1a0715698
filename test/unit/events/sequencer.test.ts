/**
 * The sequencer's round (src/events/sequencer.ts): every pending project in one transaction, then
 * again only the projects whose share came back full. Calls that commit while a round runs wait for the next round instead of being chained
 * a few at a time back to back (which kept the sequencer busy at one call in flight).
 */
import type { Db } from '../../../src/db/pool';
import { createLogger } from '../../../src/logger';

const chainEvents = jest.fn();
const projectsWithUnchainedEvents = jest.fn();
jest.mock('../../../src/db/repositories/event-chain', () => ({
  chainEvents: (...args: unknown[]) => chainEvents(...args),
  projectsWithUnchainedEvents: (...args: unknown[]) => projectsWithUnchainedEvents(...args),
}));

import { startSequencer } from '../../../src/events/sequencer';

describe('event-chain sequencer round', () => {
  beforeEach(() => {
    chainEvents.mockReset();
    projectsWithUnchainedEvents.mockReset();
  });

  it('chains all projects together, then only the full ones, and stops when no share is full', async () => {
    projectsWithUnchainedEvents.mockResolvedValue(['proj_a', 'proj_b', 'proj_c']);
    const rounds = [
      { events: 1204, fullProjects: ['proj_a'] }, // proj_b: another process holds its lock (nothing chained)
      { events: 7, fullProjects: [] },
      { events: 9, fullProjects: [] }, // committed during the round: left for the next one
    ];
    chainEvents.mockImplementation(async () => rounds.shift());
    const sequencer = startSequencer({ db: {} as Db, logger: createLogger('silent'), intervalMs: 60_000 });
    try {
      expect(await sequencer.runOnce()).toBe(1211);
      expect(chainEvents.mock.calls.map((c) => c[1])).toEqual([['proj_a', 'proj_b', 'proj_c'], ['proj_a']]);
      expect(rounds).toHaveLength(1);
    } finally {
      await sequencer.close();
    }
  });
});
