import { lockWaitMs } from '../../../src/db/partitions';

describe('how long a drop’s try waits for its locks', () => {
  it('starts short and grows after failed tries, never past 100 ms', () => {
    const waits = Array.from({ length: 40 }, (_, i) => lockWaitMs(i));
    expect(waits.slice(0, 6)).toEqual([25, 25, 50, 50, 100, 100]);
    expect(Math.max(...waits)).toBe(100);
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThanOrEqual(waits[i - 1]);
  });
});
