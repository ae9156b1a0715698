import { EventEmitter } from 'node:events';
import { deadline, releaseWithBody } from '../../../src/providers/deadline';

describe('provider call deadline', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('aborts with a TimeoutError when the deadline passes and says so', () => {
    const d = deadline(1000);
    jest.advanceTimersByTime(999);
    expect(d.signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(d.signal.aborted).toBe(true);
    expect(d.timedOut()).toBe(true);
    expect((d.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it("follows the caller's abort (not a timeout), also when the caller had already aborted", () => {
    const caller = new AbortController();
    const d = deadline(1000, caller.signal);
    caller.abort(new Error('client gone'));
    expect(d.signal.aborted).toBe(true);
    expect(d.timedOut()).toBe(false);
    expect((d.signal.reason as Error).message).toBe('client gone');

    const gone = new AbortController();
    gone.abort('before');
    expect(deadline(1000, gone.signal).signal.reason).toBe('before');
  });

  it('once released, neither the timer nor the caller aborts it, and no timer is left', () => {
    const caller = new AbortController();
    const d = deadline(1000, caller.signal);
    expect(jest.getTimerCount()).toBe(1);
    d.release();
    expect(jest.getTimerCount()).toBe(0);
    caller.abort();
    jest.advanceTimersByTime(5000);
    expect(d.signal.aborted).toBe(false);
  });

  it('is released when the response body closes', () => {
    const d = deadline(1000);
    const body = new EventEmitter();
    releaseWithBody(d, body);
    expect(jest.getTimerCount()).toBe(1);
    body.emit('close');
    expect(jest.getTimerCount()).toBe(0);
  });
});
