import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { workerSource } from '../../../src/worker-thread';

const fixture = path.join(__dirname, '../../fixtures/threads/priority-at-load.cjs');

describe('the retention thread’s source', () => {
  (process.platform === 'linux' ? it : it.skip)('lowers the thread’s nice value before its entry loads, and leaves the caller’s', async () => {
    const own = os.getPriority(0);
    expect(own).toBeLessThan(19);
    const worker = new Worker(workerSource(fixture, 19), { eval: true });
    const [atLoad] = await once(worker, 'message');
    await worker.terminate();
    expect(atLoad).toBe(19);
    expect(os.getPriority(0)).toBe(own);
  });

  it('refuses a nice value outside 0–19', () => {
    for (const bad of [-1, 20, 1.5, Number.NaN]) expect(() => workerSource(fixture, bad)).toThrow(RangeError);
    expect(workerSource(fixture, 0)).toContain(JSON.stringify(fixture));
  });
});
