import { Pace } from '../../../src/retention/pace';

/** A Pace on a clock the test moves: each pause it asks for is recorded and moves the clock by as much. */
function paced(share: number) {
  let t = 0;
  const pauses: number[] = [];
  const pace = new Pace(
    share,
    () => t,
    async (ms) => {
      pauses.push(ms);
      t += ms;
    },
  );
  return { pace, pauses, work: (ms: number) => void (t += ms) };
}

describe('Pace', () => {
  it('pauses after each slice of work so that the work is its share of the time', async () => {
    const { pace, pauses, work } = paced(0.25);
    // Steps within a slice: no pause yet.
    work(4);
    await pace.step();
    work(4);
    await pace.step();
    expect(pauses).toEqual([]);
    // 12 ms of work since the last pause: 36 ms of pause make it a quarter.
    work(4);
    await pace.step();
    expect(pauses).toEqual([36]);
    // The clock restarts after the pause.
    work(20);
    await pace.step();
    expect(pauses).toEqual([36, 60]);
  });

  it('never pauses at a share of 1, and refuses a share outside (0, 1]', async () => {
    const { pace, pauses, work } = paced(1);
    work(1000);
    await pace.step();
    expect(pauses).toEqual([]);
    for (const share of [0, -0.5, 1.5, Number.NaN]) expect(() => new Pace(share)).toThrow(RangeError);
  });
});
