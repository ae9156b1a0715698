import { useEffect } from 'preact/hooks';
import { api, ok, usd } from '../api';
import { CallsByStatusChart, LatencyChart } from '../components/CallCharts';
import { Empty, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

/**
 * The windows offered, each with a bucket size that keeps the series under the API's bucket limit
 * and a chart readable: minutes for the hour, hours for the day and the week. A bucket of whole
 * hours is read from the call rollup's hour rows; a shorter one over a day would read every minute
 * row and its latency histogram (docs/decisions/call-rollup.md).
 */
export const WINDOWS = {
  '1h': { label: 'Last hour', seconds: 3600, bucket: 60 },
  '24h': { label: 'Last 24 h', seconds: 86400, bucket: 3600 },
  '7d': { label: 'Last 7 days', seconds: 7 * 86400, bucket: 3600 },
} as const;
export type WindowId = keyof typeof WINDOWS;

/** How often the window is read again, so the charts follow the traffic. */
const LIVE_MS = 15_000;

const percent = (r: number) => `${(r * 100).toFixed(1)}%`;
const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);

export function windowOf(query: URLSearchParams): WindowId {
  const w = query.get('window');
  return w && w in WINDOWS ? (w as WindowId) : '1h';
}

/** Traffic, latency, errors and spend over a window ending now; the window lives in the URL. */
export function Overview({ project, query }: { project: ProjectView; query: URLSearchParams }) {
  const id = windowOf(query);
  const w = WINDOWS[id];
  const metrics = useLoad(() => {
    // The window ends at the end of the current bucket: whole minutes and hours are read from the
    // call rollup, so an aligned window is the cheap one (docs/decisions/call-rollup.md).
    const to = new Date(Math.ceil(Date.now() / (w.bucket * 1000)) * w.bucket * 1000);
    const from = new Date(to.getTime() - w.seconds * 1000);
    return ok(api.GET('/v1/metrics/calls', { params: { query: { from: from.toISOString(), to: to.toISOString(), bucket_seconds: w.bucket } } }));
  }, [id, project.id]);
  useEffect(() => {
    const t = setInterval(metrics.reload, LIVE_MS);
    return () => clearInterval(t);
  }, [metrics.reload]);
  const m = metrics.data;

  return (
    <>
      <Section
        title="Traffic"
        actions={
          <div class="windows" role="group" aria-label="Window">
            {(Object.keys(WINDOWS) as WindowId[]).map((k) => (
              <a key={k} href={`#/overview?window=${k}`} aria-current={k === id ? 'true' : undefined}>
                {WINDOWS[k].label}
              </a>
            ))}
          </div>
        }
      >
        <ErrorNote error={metrics.error} />
        {m && (
          <dl class="facts" aria-label="Totals">
            <dt>Calls</dt><dd>{m.totals.calls}</dd>
            <dt>Completed</dt><dd>{m.totals.completed}</dd>
            <dt>Failed</dt><dd>{m.totals.failed}</dd>
            <dt>Denied</dt><dd>{m.totals.denied}</dd>
            <dt>Error rate</dt><dd>{percent(m.totals.error_rate)}</dd>
            <dt>Denial rate</dt><dd>{percent(m.totals.denial_rate)}</dd>
            <dt>Latency p50</dt><dd>{ms(m.totals.p50_ms)}</dd>
            <dt>Latency p95</dt><dd>{ms(m.totals.p95_ms)}</dd>
            <dt>Spend</dt><dd>{usd(m.totals.cost_usd_micros)}</dd>
          </dl>
        )}
        {m && (
          <>
            <h3>Calls by status</h3>
            <CallsByStatusChart series={m.series} withDate={id === '7d'} />
            <h3>Latency</h3>
            <LatencyChart series={m.series} withDate={id === '7d'} />
          </>
        )}
      </Section>
      {m && (
        <Section title="Spend by model">
          {m.by_model.length === 0 ? (
            <Empty>No calls in this window.</Empty>
          ) : (
            <table aria-label="Spend by model">
              <thead>
                <tr><th scope="col">Model</th><th scope="col">Calls</th><th scope="col">Spend</th></tr>
              </thead>
              <tbody>
                {m.by_model.map((r) => (
                  <tr key={`${r.provider}/${r.model ?? ''}`}>
                    <td><a href={`#/calls?provider=${encodeURIComponent(r.provider)}${r.model ? `&model=${encodeURIComponent(r.model)}` : ''}`}>{r.provider}/{r.model ?? '—'}</a></td>
                    <td>{r.calls}</td>
                    <td>{usd(r.cost_usd_micros)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      )}
      {m && (
        <Section title="Spend by key">
          {m.by_key.length === 0 ? (
            <Empty>No calls in this window.</Empty>
          ) : (
            <table aria-label="Spend by key">
              <thead>
                <tr><th scope="col">Key</th><th scope="col">Calls</th><th scope="col">Spend</th></tr>
              </thead>
              <tbody>
                {m.by_key.map((r) => (
                  <tr key={r.key_id ?? '-'}>
                    <td>{r.key_id ? <a href={`#/calls?key_id=${encodeURIComponent(r.key_id)}`}>{r.key_id}</a> : '—'}</td>
                    <td>{r.calls}</td>
                    <td>{usd(r.cost_usd_micros)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      )}
    </>
  );
}
