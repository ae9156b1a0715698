/**
 * Connecting to Temporal at start: retried for a while, each retried failure reported (so a process
 * waiting for Temporal can say so), then the last error. Nothing listens on the address used here.
 */
import { freePort } from '../../../scripts/lib/temporal-dev-server';
import { connectTemporal } from '../../../src/temporal/connection';

describe('connectTemporal', () => {
  it('reports each retried failure, then gives up with the last error', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const attempts: number[] = [];
    const started = Date.now();
    await expect(connectTemporal({ address, namespace: 'default', retryForMs: 5_000, onRetry: (_err, attempt) => attempts.push(attempt) })).rejects.toThrow(/connect/i);
    // One attempt every ~0.5 s: those before the deadline are retried and reported in order (about
    // ten when connecting fails at once; a window this long still holds two on a stalled machine),
    // the one after it throws.
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts).toEqual(attempts.map((_, i) => i + 1));
    expect(Date.now() - started).toBeGreaterThanOrEqual(5_000);
  });

  it('does not retry without a retry window', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const onRetry = jest.fn();
    await expect(connectTemporal({ address, namespace: 'default', onRetry })).rejects.toThrow();
    expect(onRetry).not.toHaveBeenCalled();
  });
});
