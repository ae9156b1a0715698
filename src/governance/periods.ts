/** UTC budget periods. Starts are `YYYY-MM-DD` dates; ends are exclusive instants. */

export type PeriodKind = 'day' | 'week' | 'month' | 'quarter';
export const PERIOD_KINDS: readonly PeriodKind[] = ['day', 'week', 'month', 'quarter'];

export interface Period {
  kind: PeriodKind;
  start: string; // YYYY-MM-DD (UTC)
  end: Date; // exclusive
}

const iso = (d: Date) => d.toISOString().slice(0, 10);

export function periodOf(kind: PeriodKind, now: Date): Period {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  switch (kind) {
    case 'day': {
      const start = new Date(Date.UTC(y, m, d));
      return { kind, start: iso(start), end: new Date(Date.UTC(y, m, d + 1)) };
    }
    case 'week': {
      // ISO week: Monday 00:00 UTC to the next Monday.
      const dow = (now.getUTCDay() + 6) % 7; // Monday = 0
      const start = new Date(Date.UTC(y, m, d - dow));
      return { kind, start: iso(start), end: new Date(Date.UTC(y, m, d - dow + 7)) };
    }
    case 'month':
      return { kind, start: iso(new Date(Date.UTC(y, m, 1))), end: new Date(Date.UTC(y, m + 1, 1)) };
    case 'quarter': {
      const qm = Math.floor(m / 3) * 3;
      return { kind, start: iso(new Date(Date.UTC(y, qm, 1))), end: new Date(Date.UTC(y, qm + 3, 1)) };
    }
  }
}

export function currentPeriods(now: Date): Record<PeriodKind, Period> {
  return {
    day: periodOf('day', now),
    week: periodOf('week', now),
    month: periodOf('month', now),
    quarter: periodOf('quarter', now),
  };
}

/** Start dates of the `n` full UTC days before `now`'s day, oldest first. */
export function previousDays(now: Date, n: number): string[] {
  const out: string[] = [];
  for (let i = n; i >= 1; i--) {
    out.push(iso(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - i))));
  }
  return out;
}
