import { api, ok, usd } from '../api';
import { ErrorNote, Section, useLoad } from '../components/ui';
import { SpendChart } from '../components/SpendChart';
import type { ProjectView } from '../project';

interface Group {
  key: string;
  requests: number;
  cost: number;
}

function groupBy(rows: { provider: string | null; model: string | null; requests: number; cost_usd_micros: number }[], key: (r: { provider: string | null; model: string | null }) => string): Group[] {
  const m = new Map<string, Group>();
  for (const r of rows) {
    const k = key(r);
    const g = m.get(k) ?? { key: k, requests: 0, cost: 0 };
    g.requests += r.requests;
    g.cost += r.cost_usd_micros;
    m.set(k, g);
  }
  return [...m.values()].sort((a, b) => b.cost - a.cost);
}

const startOfWeek = (d: Date) => {
  const s = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  s.setUTCDate(s.getUTCDate() - ((s.getUTCDay() + 6) % 7));
  return s.toISOString().slice(0, 10);
};

export function Spend({ project }: { project: ProjectView }) {
  const path = { project_id: project.id };
  const forecast = useLoad(() => ok(api.GET('/v1/projects/{project_id}/cost-forecast', { params: { path } })), [project.id]);
  const usage = useLoad(() => ok(api.GET('/v1/projects/{project_id}/usage', { params: { path } })), [project.id]);
  const policy = useLoad(() => ok(api.GET('/v1/projects/{project_id}/policy', { params: { path } })), [project.id]);

  const f = forecast.data;
  const budgets = (policy.data?.document.budgets ?? {}) as Record<string, number | null>;
  const today = new Date().toISOString().slice(0, 10);
  const week = startOfWeek(new Date());
  const spent = (from: string) => (f ? f.daily.filter((d) => d.day >= from).reduce((s, d) => s + d.settled_usd_micros + d.reserved_usd_micros, 0) : 0);
  const periods = [
    { name: 'Today', spent: spent(today), cap: budgets.daily_usd_micros ?? null },
    { name: 'This week (in this month)', spent: spent(week), cap: budgets.weekly_usd_micros ?? null },
    { name: 'This month', spent: f ? f.month_to_date_usd_micros + f.reserved_now_usd_micros : 0, cap: budgets.monthly_usd_micros ?? null },
  ];

  return (
    <>
      <Section title="Spend against caps">
        <ErrorNote error={forecast.error ?? usage.error ?? policy.error} />
        <table>
          <thead><tr><th scope="col">Period</th><th scope="col">Spent and reserved</th><th scope="col">Cap</th><th scope="col">Used</th></tr></thead>
          <tbody>
            {periods.map((p) => (
              <tr key={p.name}>
                <th scope="row">{p.name}</th>
                <td>{usd(p.spent)}</td>
                <td>{p.cap === null ? 'no cap' : usd(p.cap)}</td>
                <td>{p.cap ? <meter min={0} max={p.cap} value={p.spent} high={p.cap * 0.8} aria-label={`${p.name}: share of the cap used`}>{Math.round((100 * p.spent) / p.cap)}%</meter> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {f && <SpendChart daily={f.daily} dailyCap={f.caps.daily_usd_micros} />}
      </Section>
      {f && (
        <Section title="Month-end forecast">
          <dl class="facts">
            <dt>Month to date (settled)</dt><dd>{usd(f.month_to_date_usd_micros)}</dd>
            <dt>Reserved now</dt><dd>{usd(f.reserved_now_usd_micros)}</dd>
            <dt>Run-rate projection</dt><dd>{usd(f.run_rate_projection_usd_micros)}</dd>
            <dt>Active intents (remaining projected)</dt><dd>{f.workflow_intents.active} ({usd(f.workflow_intents.remaining_projected_usd_micros)})</dd>
            <dt>Projected month end</dt><dd data-testid="forecast">{usd(f.projected_month_end_usd_micros)}</dd>
            <dt>Monthly cap</dt><dd>{f.caps.monthly_usd_micros === null ? 'no cap' : `${usd(f.caps.monthly_usd_micros)}${f.caps.projected_over_monthly_cap ? ' — projected over the cap' : ''}`}</dd>
          </dl>
        </Section>
      )}
      {usage.data && (
        <Section title="This month by provider and model">
          <table>
            <thead><tr><th scope="col">Provider / model</th><th scope="col">Requests</th><th scope="col">Cost</th></tr></thead>
            <tbody>
              {groupBy(usage.data.data, (r) => `${r.provider ?? '?'} / ${r.model ?? '?'}`).map((g) => (
                <tr key={g.key}><th scope="row">{g.key}</th><td>{g.requests}</td><td>{usd(g.cost)}</td></tr>
              ))}
              <tr class="total"><th scope="row">Total</th><td>{usage.data.totals.requests}</td><td>{usd(usage.data.totals.cost_usd_micros)}</td></tr>
            </tbody>
          </table>
          <p><a href={`/v1/projects/${project.id}/usage`} onClick={(e) => { e.preventDefault(); void downloadCsv(project.id); }}>Download CSV</a></p>
        </Section>
      )}
    </>
  );
}

async function downloadCsv(projectId: string): Promise<void> {
  const { data } = await api.GET('/v1/projects/{project_id}/usage', { params: { path: { project_id: projectId } }, headers: { accept: 'text/csv' }, parseAs: 'text' });
  if (typeof data !== 'string') return;
  const url = URL.createObjectURL(new Blob([data], { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `usage-${projectId}.csv`;
  a.click();
  URL.revokeObjectURL(url);
}
