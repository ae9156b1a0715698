import { useState } from 'preact/hooks';
import { api, ok, when, type Schemas } from '../api';
import { Badge, Empty, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

export function Keys({ project }: { project: ProjectView }) {
  const path = { project_id: project.id };
  const keys = useLoad(() => ok(api.GET('/v1/projects/{project_id}/api-keys', { params: { path } })), [project.id]);
  const [name, setName] = useState('');
  const [scope, setScope] = useState<'client' | 'admin'>('client');
  const [created, setCreated] = useState<Schemas['CreatedApiKey'] | null>(null);
  const [copied, setCopied] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const canManage = project.role !== 'viewer';

  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      setCreated(await ok(api.POST('/v1/projects/{project_id}/api-keys', { params: { path }, body: { name: name || undefined, scope } })));
      setCopied(false);
      setName('');
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };
  const revoke = async (key: Schemas['ApiKey']) => {
    if (!window.confirm(`Revoke ${key.name ?? key.key_prefix}? Calls with it fail at once.`)) return;
    setError(null);
    try {
      await ok(api.POST('/v1/projects/{project_id}/api-keys/{key_id}/revoke', { params: { path: { ...path, key_id: key.id } } }));
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };
  const copy = async () => {
    if (!created) return;
    await navigator.clipboard.writeText(created.key).catch(() => undefined);
    setCopied(true);
  };

  return (
    <>
      {canManage && (
        <Section title="Create an API key">
          <form class="inline" onSubmit={create}>
            <label>
              Name
              <input name="key-name" value={name} maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
            </label>
            <label>
              Scope
              <select name="key-scope" value={scope} onChange={(e) => setScope(e.currentTarget.value as 'client' | 'admin')}>
                <option value="client">client</option>
                <option value="admin">admin</option>
              </select>
            </label>
            <button type="submit">Create key</button>
          </form>
          {created && (
            <div class="secret" role="status">
              <p>
                The secret of <strong>{created.name ?? created.key_prefix}</strong> is shown once. Copy it now.
              </p>
              <code data-testid="new-key-secret">{created.key}</code>
              <button type="button" onClick={copy}>
                {copied ? 'Copied' : 'Copy'}
              </button>
            </div>
          )}
        </Section>
      )}
      <ErrorNote error={error} />
      <Section title="API keys">
        <ErrorNote error={keys.error} />
        {keys.data && keys.data.data.length === 0 && <Empty>No keys yet.</Empty>}
        {keys.data && keys.data.data.length > 0 && (
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Scope</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                {canManage && <th scope="col"><span class="sr-only">Actions</span></th>}
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <td>{k.name ?? '—'}</td>
                  <td>
                    <code>{k.key_prefix}…</code>
                  </td>
                  <td>{k.scope}</td>
                  <td>
                    <Badge tone={k.status === 'active' ? 'ok' : 'bad'}>{k.status}</Badge>
                  </td>
                  <td>{when(k.created_at)}</td>
                  <td>{when(k.expires_at)}</td>
                  {canManage && (
                    <td>
                      {k.status === 'active' && (
                        <button type="button" class="danger" onClick={() => revoke(k)} aria-label={`Revoke ${k.name ?? k.key_prefix}`}>
                          Revoke
                        </button>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </>
  );
}
