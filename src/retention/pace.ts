/**
 * Retention's share of the time (RETENTION_CPU_SHARE, 0 < share ≤ 1): its loops call `step`
 * between pieces of work, and once a slice's worth has run it pauses long enough that it works
 * that share of the time, as PostgreSQL's vacuum_cost_delay paces a vacuum. Its CPU (an archive
 * written out, hashed and read back, its rows deleted) and the PostgreSQL work it asks for then
 * leave the rest to the calls on the same cores (docs/decisions/retention-and-archives.md).
 */

/** Work between two pauses: long enough that a pause's timer costs nothing, short enough that a call beside it barely waits. */
const SLICE_MS = 10;

export class Pace {
  private since: number;

  constructor(
    readonly share: number,
    private readonly now: () => number = () => performance.now(),
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {
    if (!(share > 0 && share <= 1)) throw new RangeError(`a share of the time is in (0, 1], not ${share}`);
    this.since = now();
  }

  /** Between two pieces of work: a pause once a slice has run (none at a share of 1). */
  async step(): Promise<void> {
    if (this.share === 1) return;
    const busy = this.now() - this.since;
    if (busy < SLICE_MS) return;
    await this.sleep(busy * (1 / this.share - 1));
    this.since = this.now();
  }
}
