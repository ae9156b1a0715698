/**
 * The sequencer's round (src/events/chainer.ts): it keeps chaining a project only while batches come
 * back full. Calls that commit while a round runs wait for the next round instead of being chained
 * a few at a time back to back (which kept the sequencer busy at one call in flight).
 */
import type { Db } from '../../../src/db/pool';
import { createLogger } from '../../../src/logger';

const chainProjectEvents = jest.fn();
const projectsWithUnchainedEvents = jest.fn();
jest.mock('../../../src/db/repositories/events', () => ({
  chainProjectEvents: (...args: unknown[]) => chainProjectEvents(...args),
  projectsWithUnchainedEvents: (...args: unknown[]) => projectsWithUnchainedEvents(...args),
}));

import { startEventChainer } from '../../../src/events/chainer';

describe('event-chain sequencer round', () => {
  beforeEach(() => {
    chainProjectEvents.mockReset();
    projectsWithUnchainedEvents.mockReset();
  });

  it('chains a backlog batch after batch, and stops at the first batch that is not full', async () => {
    projectsWithUnchainedEvents.mockResolvedValue(['proj_a', 'proj_b']);
    const batches: Record<string, { events: number; full: boolean }[]> = {
      proj_a: [
        { events: 1200, full: true },
        { events: 7, full: false },
        { events: 9, full: false }, // committed during the round: left for the next one
      ],
      proj_b: [
        { events: 0, full: false }, // another process holds the lock
        { events: 4, full: false },
      ],
    };
    chainProjectEvents.mockImplementation(async (_db: Db, projectId: string) => batches[projectId].shift());
    const chainer = startEventChainer({ db: {} as Db, logger: createLogger('silent'), intervalMs: 60_000 });
    try {
      expect(await chainer.runOnce()).toBe(1207);
      expect(chainProjectEvents.mock.calls.map((c) => c[1])).toEqual(['proj_a', 'proj_a', 'proj_b']);
    } finally {
      await chainer.close();
    }
  });
});
