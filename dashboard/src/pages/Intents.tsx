import { useState } from 'preact/hooks';
import { api, ok, when } from '../api';
import { Badge, Empty, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

/** Intents: calls against expected and max, drift, expiry; one intent's amendments on demand. */
export function Intents({ project }: { project: ProjectView }) {
  const list = useLoad(() => ok(api.GET('/v1/workflows', { params: { query: { limit: 100 } } })), [project.id]);
  const [open, setOpen] = useState<string | null>(null);
  return (
    <Section title="Intents">
      <ErrorNote error={list.error} />
      {list.data && list.data.data.length === 0 && <Empty>No intents declared.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <table>
          <thead>
            <tr><th scope="col">Workflow</th><th scope="col">Status</th><th scope="col">Calls</th><th scope="col">Progress</th><th scope="col">Declared</th><th scope="col">Expires</th></tr>
          </thead>
          <tbody>
            {list.data.data.map((w) => (
              <tr key={w.workflow_id}>
                <td><button type="button" class="link" aria-expanded={open === w.workflow_id} onClick={() => setOpen(open === w.workflow_id ? null : w.workflow_id)}>{w.workflow_id}</button></td>
                <td><Badge tone={w.status === 'active' ? 'ok' : w.status === 'completed' ? 'info' : 'bad'}>{w.status}</Badge></td>
                <td>{w.actual_calls} / expected {w.expected_calls ?? '—'} / max {w.max_calls ?? '—'}</td>
                <td>{w.max_calls ? <meter min={0} max={w.max_calls} value={w.actual_calls} high={w.expected_calls ?? undefined} aria-label={`${w.workflow_id}: calls against the maximum`} /> : '—'}</td>
                <td>{when(w.declared_at)}</td>
                <td>{when(w.expires_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {open && <IntentDetail id={open} />}
    </Section>
  );
}

function IntentDetail({ id }: { id: string }) {
  const w = useLoad(() => ok(api.GET('/v1/workflows/{workflow_id}', { params: { path: { workflow_id: id } } })), [id]);
  if (w.error) return <ErrorNote error={w.error} />;
  if (!w.data) return <p aria-busy="true">Loading {id}…</p>;
  const d = w.data;
  return (
    <article class="card" aria-label={`Workflow ${id}`}>
      <h3>{id} (version {d.version})</h3>
      <p>
        Drift: {d.drift.expected_calls_exceeded ? <Badge tone="warn">over expected calls</Badge> : 'within expected calls'}
        {d.drift.max_calls_exceeded && <Badge tone="bad">over max calls</Badge>}
      </p>
      <h4>Amendments</h4>
      {d.amendments.length === 0 ? <Empty>None.</Empty> : (
        <ol>{d.amendments.map((a, i) => <li key={i}><pre>{JSON.stringify(a, null, 2)}</pre></li>)}</ol>
      )}
    </article>
  );
}
