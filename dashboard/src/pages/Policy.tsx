import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure, ok, when, type Schemas } from '../api';
import { ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

const CAPS = ['per_request_usd_micros', 'daily_usd_micros', 'weekly_usd_micros', 'monthly_usd_micros'] as const;
const CAP_LABELS: Record<(typeof CAPS)[number], string> = {
  per_request_usd_micros: 'Per request',
  daily_usd_micros: 'Daily',
  weekly_usd_micros: 'Weekly',
  monthly_usd_micros: 'Monthly',
};
const RULE_KEYS = ['rate_limits', 'allowed_models', 'deny_rules', 'review_rules'] as const;

type Doc = Record<string, unknown> & { budgets: Record<string, unknown>; firewall: { mode: string } };

/** Caps in USD in the form, micro-USD on the wire; an empty field is "no cap" (null). */
const toUsd = (micros: unknown) => (typeof micros === 'number' ? String(micros / 1_000_000) : '');
const toMicros = (usd: string) => (usd.trim() === '' ? null : Math.round(Number(usd) * 1_000_000));

export function Policy({ project }: { project: ProjectView }) {
  const path = { project_id: project.id };
  const policy = useLoad(() => ok(api.GET('/v1/projects/{project_id}/policy', { params: { path } })), [project.id]);
  const versions = useLoad(() => ok(api.GET('/v1/projects/{project_id}/policy/versions', { params: { path, query: { limit: 20 } } })), [project.id]);
  const templates = useLoad(() => ok(api.GET('/v1/policy-templates')), []);
  const [caps, setCaps] = useState<Record<string, string>>({});
  const [mode, setMode] = useState('block');
  const [rules, setRules] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState<number | null>(null);
  const canEdit = project.role !== 'viewer';

  useEffect(() => {
    if (!policy.data) return;
    const doc = policy.data.document as Doc;
    setCaps(Object.fromEntries(CAPS.map((c) => [c, toUsd(doc.budgets[c])])));
    setMode(doc.firewall.mode);
    setRules(JSON.stringify(Object.fromEntries(RULE_KEYS.map((k) => [k, doc[k]])), null, 2));
  }, [policy.data]);

  const issues = error instanceof ApiFailure ? error.issues : [];
  const issueAt = (p: string) => issues.find((i) => i.path === p || i.path.startsWith(`${p}.`));

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setSaved(null);
    let parsedRules: Record<string, unknown>;
    try {
      parsedRules = JSON.parse(rules) as Record<string, unknown>;
    } catch (err) {
      setError(new ApiFailure(400, 'invalid_json', `Rules: ${(err as Error).message}`, {}));
      return;
    }
    try {
      const budgets = Object.fromEntries(CAPS.map((c) => [c, toMicros(caps[c] ?? '')]));
      const stored = await ok(api.PATCH('/v1/projects/{project_id}/policy', { params: { path }, body: { ...parsedRules, budgets, firewall: { mode } } }));
      setSaved(stored.version);
      policy.reload();
      versions.reload();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <>
      <Section title="Policy">
        {policy.data && (
          <p class="hint">
            Version {policy.data.version}, updated {when(policy.data.updated_at)} {policy.data.updated_by ? `by ${policy.data.updated_by}` : ''}
          </p>
        )}
        <ErrorNote error={policy.error} />
        {policy.data && (
        <form onSubmit={save} noValidate>
          <fieldset disabled={!canEdit}>
            <legend>Spend caps (USD; empty means no cap)</legend>
            <div class="grid">
              {CAPS.map((c) => {
                const issue = issueAt(`budgets.${c}`);
                return (
                  <label key={c}>
                    {CAP_LABELS[c]}
                    <input name={c} inputMode="decimal" value={caps[c] ?? ''} aria-invalid={issue ? 'true' : undefined} aria-describedby={issue ? `err-${c}` : undefined}
                      onInput={(e) => setCaps({ ...caps, [c]: e.currentTarget.value })} />
                    {issue && <span class="field-error" id={`err-${c}`}>{issue.message}</span>}
                  </label>
                );
              })}
            </div>
          </fieldset>
          <fieldset disabled={!canEdit}>
            <legend>Prompt firewall</legend>
            <label>
              Mode
              <select name="firewall-mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
                <option value="block">block</option>
                <option value="monitor">monitor</option>
                <option value="off">off</option>
              </select>
            </label>
          </fieldset>
          <fieldset disabled={!canEdit}>
            <legend>Rules and rate limits (JSON)</legend>
            <label>
              <span class="sr-only">Rules and rate limits as JSON</span>
              <textarea name="rules" rows={14} spellcheck={false} value={rules} aria-invalid={RULE_KEYS.some((k) => issueAt(k)) ? 'true' : undefined} onInput={(e) => setRules(e.currentTarget.value)} />
            </label>
            {RULE_KEYS.map((k) => issueAt(k)).filter(Boolean).map((i) => (
              <p class="field-error" key={i!.path}><code>{i!.path}</code> {i!.message}</p>
            ))}
          </fieldset>
          {canEdit && <button type="submit">Save policy</button>}
          {saved !== null && <p role="status">Saved as version {saved}.</p>}
        </form>
        )}
        <ErrorNote error={error} />
      </Section>
      <Section title="Version history">
        <ErrorNote error={versions.error} />
        {versions.data && (versions.data.data.length === 0 ? <p class="empty">The project runs on the default policy (never changed).</p> : (
          <table>
            <thead><tr><th scope="col">Version</th><th scope="col">Updated</th><th scope="col">By</th><th scope="col">Firewall</th><th scope="col">Monthly cap</th></tr></thead>
            <tbody>
              {versions.data.data.map((v: Schemas['ProjectPolicy']) => (
                <tr key={v.version}>
                  <td>{v.version}</td>
                  <td>{when(v.updated_at)}</td>
                  <td>{v.updated_by ?? '—'}</td>
                  <td>{v.document.firewall.mode}</td>
                  <td>{toUsd((v.document.budgets as Record<string, unknown>).monthly_usd_micros) || '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      </Section>
      <Section title="Policy templates">
        <ErrorNote error={templates.error} />
        {templates.data && (
          <ul class="cards">
            {templates.data.data.map((t) => (
              <li key={t.id}>
                <h3>{t.name}</h3>
                <p>{t.description}</p>
                <details>
                  <summary>Rule ({t.category})</summary>
                  <pre>{JSON.stringify(t.policy, null, 2)}</pre>
                </details>
              </li>
            ))}
          </ul>
        )}
      </Section>
    </>
  );
}
