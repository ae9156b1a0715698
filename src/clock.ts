/** Time source injected into governance and budget code so tests control it exactly. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export function fixedClock(at: Date | string): Clock & { set(t: Date | string): void; advance(ms: number): void } {
  let current = new Date(at);
  return {
    now: () => new Date(current),
    set: (t) => {
      current = new Date(t);
    },
    advance: (ms) => {
      current = new Date(current.getTime() + ms);
    },
  };
}
