import { api, ok, when } from '../api';
import { Badge, Empty, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

/** Async jobs and webhook deliveries. */
export function Jobs({ project }: { project: ProjectView }) {
  const jobs = useLoad(() => ok(api.GET('/v1/jobs', { params: { query: { limit: 50 } } })), [project.id]);
  const hooks = useLoad(() => ok(api.GET('/v1/webhooks')), [project.id]);
  return (
    <>
      <Section title="Jobs">
        <ErrorNote error={jobs.error} />
        {jobs.data && jobs.data.data.length === 0 && <Empty>No jobs.</Empty>}
        {jobs.data && jobs.data.data.length > 0 && (
          <table>
            <thead><tr><th scope="col">Job</th><th scope="col">Status</th><th scope="col">Operation</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Completed</th></tr></thead>
            <tbody>
              {jobs.data.data.map((j) => (
                <tr key={j.id}>
                  <td><a href={`#/timeline/request/${j.request_id}`}>{j.id}</a></td>
                  <td><Badge tone={j.status === 'completed' ? 'ok' : j.status === 'failed' ? 'bad' : 'info'}>{j.status}</Badge></td>
                  <td>{j.operation}</td>
                  <td>{j.attempts}</td>
                  <td>{when(j.created_at)}</td>
                  <td>{when(j.completed_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <Section title="Webhook subscriptions">
        <ErrorNote error={hooks.error} />
        {hooks.data && hooks.data.data.length === 0 && <Empty>No webhook subscriptions.</Empty>}
        {hooks.data?.data.map((h) => <Deliveries key={h.id} id={h.id} url={h.url} />)}
      </Section>
    </>
  );
}

function Deliveries({ id, url }: { id: string; url: string }) {
  const d = useLoad(() => ok(api.GET('/v1/webhooks/{subscription_id}/deliveries', { params: { path: { subscription_id: id } } })), [id]);
  return (
    <details class="card">
      <summary>{url} <span class="muted">({id})</span></summary>
      <ErrorNote error={d.error} />
      {d.data && (d.data.data.length === 0 ? <Empty>No deliveries yet.</Empty> : (
        <table>
          <thead><tr><th scope="col">Event</th><th scope="col">Attempt</th><th scope="col">At</th><th scope="col">Status</th><th scope="col">Latency</th></tr></thead>
          <tbody>
            {d.data.data.map((x) => (
              <tr key={x.id}><td>{x.event_type ?? '—'}</td><td>{x.attempt}</td><td>{when(x.attempted_at)}</td><td><Badge tone={x.succeeded ? 'ok' : 'bad'}>{x.status_code ?? x.error ?? 'failed'}</Badge></td><td>{x.latency_ms ?? '—'} ms</td></tr>
            ))}
          </tbody>
        </table>
      ))}
    </details>
  );
}
