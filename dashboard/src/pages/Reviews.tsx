import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, usd, when, type Schemas } from '../api';
import { Badge, Empty, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

/**
 * Permits waiting for a human (policy.review_required): attest (allow) or deny (revoke).
 * `?permit=<id>` (a denied call's link) opens the queue at that permit: its card is marked and
 * focused, or, when it no longer waits, what became of it.
 */
export function Reviews({ project, user, query }: { project: ProjectView; user: string; query: URLSearchParams }) {
  const focus = query.get('permit');
  const pending = useLoad(() => ok(api.GET('/v1/permits', { params: { query: { decision: 'review', limit: 100 } } })), [project.id]);
  const focused = useLoad(() => (focus ? ok(api.GET('/v1/permits/{permit_id}', { params: { path: { permit_id: focus } } })) : Promise.resolve(null)), [focus, project.id, pending.data]);
  const revoked = useLoad(() => ok(api.GET('/v1/permits', { params: { query: { limit: 100 } } })), [project.id]);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const canDecide = project.role !== 'viewer';
  const waiting = pending.data?.data.filter((p) => p.status === 'pending_review') ?? [];
  const revocations = revoked.data?.data.filter((p) => p.status === 'revoked') ?? [];

  const decide = async (p: Schemas['Permit'], action: 'attest' | 'deny', reason: string) => {
    setError(null);
    setDone(null);
    try {
      if (action === 'attest') {
        const r = await ok(api.POST('/v1/permits/{permit_id}/attest', { params: { path: { permit_id: p.id } }, body: { attested_by: user, reason } }));
        setDone(`Attested ${p.id}: allowed as ${r.allowed_permit.id}`);
      } else {
        await ok(api.POST('/v1/permits/{permit_id}/revoke', { params: { path: { permit_id: p.id } }, body: { reason, actor: user } }));
        setDone(`Denied ${p.id}`);
      }
      pending.reload();
      revoked.reload();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <>
      <Section title="Waiting for review">
        <ErrorNote error={error ?? pending.error} />
        {done && <p role="status">{done}</p>}
        <ErrorNote error={focused.error} />
        {focused.data && focused.data.status !== 'pending_review' && (
          <p class="note" data-permit-id={focused.data.id}>
            <a href={`#/timeline/permit/${focused.data.id}`}>{focused.data.id}</a> no longer waits: {focused.data.decision === 'review' ? focused.data.status.replace('_', ' ') : `its decision is ${focused.data.decision}`}.
          </p>
        )}
        {pending.data && waiting.length === 0 && <Empty>Nothing waits for review.</Empty>}
        {waiting.map((p) => (
          <ReviewCard key={p.id} p={p} focused={p.id === focus} canDecide={canDecide} onDecide={(action, reason) => decide(p, action, reason)} />
        ))}
      </Section>
      <Section title="Revocations">
        {revocations.length === 0 ? <Empty>No revoked permits among the latest 100.</Empty> : (
          <table>
            <thead><tr><th scope="col">Permit</th><th scope="col">Decision</th><th scope="col">Model</th><th scope="col">Status</th></tr></thead>
            <tbody>{revocations.map((p) => <tr key={p.id}><td><a href={`#/timeline/permit/${p.id}`}>{p.id}</a></td><td>{p.decision}</td><td>{p.provider}/{p.model}</td><td><Badge tone="bad">{p.status}</Badge></td></tr>)}</tbody>
          </table>
        )}
      </Section>
    </>
  );
}

function ReviewCard({ p, focused, canDecide, onDecide }: { p: Schemas['Permit']; focused: boolean; canDecide: boolean; onDecide: (a: 'attest' | 'deny', reason: string) => Promise<void> }) {
  const [reason, setReason] = useState('');
  const extra = p as Schemas['Permit'] & { issued_at?: string; reason?: string };
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    if (focused) ref.current?.focus();
  }, [focused]);
  return (
    <article ref={ref} class={focused ? 'card focused' : 'card'} data-permit-id={p.id} aria-label={`Review ${p.id}`} aria-current={focused ? 'true' : undefined} tabIndex={focused ? -1 : undefined}>
      <h3><a href={`#/timeline/permit/${p.id}`}>{p.id}</a> <Badge tone="warn">{p.reason_code}</Badge></h3>
      <p>{p.operation} on {p.provider}/{p.model}, estimated {usd(p.estimate.cost_usd_micros)}{p.workflow_id ? `, workflow ${p.workflow_id}` : ''}; issued {when(extra.issued_at)}</p>
      {canDecide && (
        <form class="inline" onSubmit={(e) => e.preventDefault()}>
          <label>
            Reason
            <input name="reason" required value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
          </label>
          <button type="button" disabled={!reason} onClick={() => onDecide('attest', reason)}>Attest</button>
          <button type="button" class="danger" disabled={!reason} onClick={() => onDecide('deny', reason)}>Deny</button>
        </form>
      )}
    </article>
  );
}
