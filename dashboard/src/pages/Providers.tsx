import { useState } from 'preact/hooks';
import { api, ok, when, type Schemas } from '../api';
import { Badge, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

type Provider = Schemas['ProjectProvider'];

/** Provider keys: set, test, remove. A stored key is never shown back, only its last four characters. */
export function Providers({ project }: { project: ProjectView }) {
  const list = useLoad(() => ok(api.GET('/v1/projects/{project_id}/providers', { params: { path: { project_id: project.id } } })), [project.id]);
  const [error, setError] = useState<unknown>(null);
  const [tests, setTests] = useState<Record<string, Schemas['ProviderKeyTest']>>({});
  const canManage = project.role !== 'viewer';
  const path = (provider: string) => ({ path: { project_id: project.id, provider } });

  const act = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      list.reload();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <Section title="Provider keys">
      <p class="hint">Calls use the project's key when one is set, else the deployment's. Keys are encrypted at rest and never displayed.</p>
      <ErrorNote error={error ?? list.error} />
      {list.data && (
        <table>
          <thead>
            <tr>
              <th scope="col">Provider</th>
              <th scope="col">Key in use</th>
              <th scope="col">Project key</th>
              <th scope="col">Last test</th>
              {canManage && <th scope="col">Set or replace</th>}
              {canManage && <th scope="col"><span class="sr-only">Actions</span></th>}
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((p) => (
              <ProviderRow key={p.provider} p={p} test={tests[p.provider]} canManage={canManage}
                onSet={(apiKey) => act(() => ok(api.PUT('/v1/projects/{project_id}/providers/{provider}/key', { params: path(p.provider), body: { api_key: apiKey } })))}
                onTest={() => act(async () => {
                  const t = await ok(api.POST('/v1/projects/{project_id}/providers/{provider}/test', { params: path(p.provider) }));
                  setTests((prev) => ({ ...prev, [p.provider]: t }));
                })}
                onRemove={() => window.confirm(`Remove the ${p.provider} key of this project?`) && act(() => ok(api.DELETE('/v1/projects/{project_id}/providers/{provider}/key', { params: path(p.provider) })))}
              />
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function ProviderRow(props: { p: Provider; test?: Schemas['ProviderKeyTest']; canManage: boolean; onSet: (key: string) => Promise<void>; onTest: () => Promise<void>; onRemove: () => unknown }) {
  const { p, test, canManage } = props;
  const [value, setValue] = useState('');
  return (
    <tr data-provider={p.provider}>
      <th scope="row">{p.provider}</th>
      <td>{p.key_source}</td>
      <td>{p.key ? <code>…{p.key.last_four}</code> : '—'} {p.key && <Badge tone={p.key.status === 'verified' ? 'ok' : p.key.status === 'failing' ? 'bad' : 'info'}>{p.key.status}</Badge>}</td>
      <td>{test ? `${test.outcome}${test.error ? `: ${test.error}` : ''} (${test.latency_ms} ms, ${when(test.tested_at)})` : '—'}</td>
      {canManage && (
        <td>
          <form class="inline" onSubmit={async (e) => { e.preventDefault(); await props.onSet(value); setValue(''); }}>
            <label class="sr-only" for={`key-${p.provider}`}>New {p.provider} key</label>
            <input id={`key-${p.provider}`} type="password" autoComplete="off" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
            <button type="submit">Save</button>
          </form>
        </td>
      )}
      {canManage && (
        <td class="actions">
          <button type="button" onClick={props.onTest}>Test</button>
          {p.key && <button type="button" class="danger" onClick={props.onRemove}>Remove</button>}
        </td>
      )}
    </tr>
  );
}
