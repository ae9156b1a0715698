import { useEffect } from 'preact/hooks';
import { api, ok, usd, type Schemas } from '../api';
import { Badge, Empty, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';
import { WINDOWS, windowOf, type WindowId } from './Overview';

/** How often the window is read again, so the counts follow the traffic. */
const LIVE_MS = 15_000;

type Decision = Schemas['GovernanceMetrics']['decisions'][number];
type Intent = Schemas['WorkflowList']['data'][number];

const DECISION_TONE: Record<Decision['decision'], 'ok' | 'warn' | 'bad' | 'info'> = { allow: 'ok', deny: 'bad', review: 'info', throttle: 'warn' };

/** A count drawn as a bar against the largest count of its table, with the number beside it. */
function CountBar({ count, max, label }: { count: number; max: number; label: string }) {
  return (
    <span class="count-bar">
      <span class="track" aria-hidden="true">
        <span class="fill" style={{ width: `${max === 0 ? 0 : (count / max) * 100}%` }} />
      </span>
      <span aria-label={`${label}: ${count}`}>{count}</span>
    </span>
  );
}

/** Where a decision row leads: a denial to the denied calls of the window, a review to the queue to attest. */
function decisionLink(d: Decision, from: string) {
  if (d.decision === 'deny') return <a href={`#/calls?status=denied&created_at_gte=${encodeURIComponent(from)}`}>{d.reason_code}</a>;
  if (d.decision === 'review') return <a href={'#/reviews'}>{d.reason_code}</a>;
  return <code>{d.reason_code}</code>;
}

/**
 * Why calls were stopped or changed over a window ending now (decisions by reason code, firewall
 * actions by category: counts and codes only, never prompt text), and the active intents against
 * what they declared. The window lives in the URL, as on the Overview.
 */
export function Governance({ project, query }: { project: ProjectView; query: URLSearchParams }) {
  const id = windowOf(query);
  const w = WINDOWS[id];
  const metrics = useLoad(() => {
    const to = new Date();
    const from = new Date(to.getTime() - w.seconds * 1000);
    return ok(api.GET('/v1/metrics/governance', { params: { query: { from: from.toISOString(), to: to.toISOString() } } }));
  }, [id, project.id]);
  useEffect(() => {
    const t = setInterval(metrics.reload, LIVE_MS);
    return () => clearInterval(t);
  }, [metrics.reload]);
  const m = metrics.data;
  const maxDecision = Math.max(0, ...(m?.decisions.map((d) => d.count) ?? []));
  const maxFirewall = Math.max(0, ...(m?.firewall.map((f) => f.count) ?? []));

  return (
    <>
      <Section
        title="Decisions"
        actions={
          <div class="windows" role="group" aria-label="Window">
            {(Object.keys(WINDOWS) as WindowId[]).map((k) => (
              <a key={k} href={`#/governance?window=${k}`} aria-current={k === id ? 'true' : undefined}>
                {WINDOWS[k].label}
              </a>
            ))}
          </div>
        }
      >
        <ErrorNote error={metrics.error} />
        {m && (
          <dl class="facts" aria-label="Decision totals">
            <dt>Decisions</dt><dd>{m.totals.decisions}</dd>
            <dt>Allowed</dt><dd>{m.totals.allow}</dd>
            <dt>Denied</dt><dd>{m.totals.deny}</dd>
            <dt>Sent to review</dt><dd>{m.totals.review}</dd>
            <dt>Throttled</dt><dd>{m.totals.throttle}</dd>
          </dl>
        )}
        {m && m.decisions.length === 0 && <Empty>No decisions in this window.</Empty>}
        {m && m.decisions.length > 0 && (
          <table aria-label="Decisions by reason code">
            <thead>
              <tr><th scope="col">Decision</th><th scope="col">Reason code</th><th scope="col">Count</th></tr>
            </thead>
            <tbody>
              {m.decisions.map((d) => (
                <tr key={`${d.decision}/${d.reason_code}`} data-decision={d.decision}>
                  <td><Badge tone={DECISION_TONE[d.decision]}>{d.decision}</Badge></td>
                  <td>{decisionLink(d, m.window.from)}</td>
                  <td><CountBar count={d.count} max={maxDecision} label={`${d.decision} ${d.reason_code}`} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      {m && (
        <Section title="Firewall actions">
          {m.firewall.length === 0 ? (
            <Empty>The firewall blocked, redacted and flagged nothing in this window.</Empty>
          ) : (
            <table aria-label="Firewall actions by category">
              <thead>
                <tr><th scope="col">Action</th><th scope="col">Category</th><th scope="col">Count</th></tr>
              </thead>
              <tbody>
                {m.firewall.map((f) => (
                  <tr key={`${f.action}/${f.category}`}>
                    <td><Badge tone={f.action === 'blocked' ? 'bad' : f.action === 'redacted' ? 'warn' : 'info'}>{f.action}</Badge></td>
                    <td>{f.category}</td>
                    <td><CountBar count={f.count} max={maxFirewall} label={`${f.action} ${f.category}`} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      )}
      <ActiveIntents project={project} />
    </>
  );
}

/** A bar of `value` against `of`, with a tick at `mark` (the expected calls) when there is one. */
function Progress({ value, of, mark, label, tone }: { value: number; of: number; mark?: number | null; label: string; tone: 'ok' | 'warn' | 'bad' }) {
  const pct = (v: number) => `${of === 0 ? 0 : Math.min(100, (v / of) * 100)}%`;
  return (
    <div class="progress" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={of} aria-valuenow={value}>
      <span class={`fill ${tone}`} style={{ width: pct(value) }} />
      {mark !== null && mark !== undefined && <span class="mark" style={{ left: pct(mark) }} />}
    </div>
  );
}

/** The project's active intents: calls against expected (the tick) and max (the end), spend against the projection. */
function ActiveIntents({ project }: { project: ProjectView }) {
  const list = useLoad(() => ok(api.GET('/v1/workflows', { params: { query: { status: 'active', limit: 100 } } })), [project.id]);
  return (
    <Section title="Active intents">
      <ErrorNote error={list.error} />
      {list.data && list.data.data.length === 0 && <Empty>No active intents.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <table aria-label="Active intents">
          <thead>
            <tr><th scope="col">Workflow</th><th scope="col">Calls</th><th scope="col">Cost</th><th scope="col">Drift</th></tr>
          </thead>
          <tbody>
            {list.data.data.map((i) => (
              <IntentRow key={i.workflow_id} intent={i} />
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function IntentRow({ intent: i }: { intent: Intent }) {
  const overExpected = i.expected_calls !== null && i.actual_calls > i.expected_calls;
  const overMax = i.max_calls !== null && i.actual_calls > i.max_calls;
  // The bar ends at the ceiling; without one, at the expectation or what was done, whichever is larger.
  const end = i.max_calls ?? Math.max(i.expected_calls ?? 0, i.actual_calls, 1);
  const overCost = i.actual_cost_usd_micros > i.projected_cost_usd_micros;
  return (
    <tr data-workflow-id={i.workflow_id}>
      <td><a href={`#/calls?workflow_id=${encodeURIComponent(i.workflow_id)}`}>{i.workflow_id}</a></td>
      <td>
        <Progress value={i.actual_calls} of={end} mark={i.expected_calls} label={`${i.workflow_id}: calls`} tone={overMax ? 'bad' : overExpected ? 'warn' : 'ok'} />
        <span class="muted">{i.actual_calls} of expected {i.expected_calls ?? '—'}, max {i.max_calls ?? '—'}</span>
      </td>
      <td>
        <Progress value={i.actual_cost_usd_micros} of={Math.max(i.projected_cost_usd_micros, i.actual_cost_usd_micros)} label={`${i.workflow_id}: cost`} tone={overCost ? 'warn' : 'ok'} />
        <span class="muted">{usd(i.actual_cost_usd_micros)} of projected {usd(i.projected_cost_usd_micros)}</span>
      </td>
      <td>
        {overMax ? <Badge tone="bad">over max calls</Badge> : overExpected ? <Badge tone="warn">drift: over expected calls</Badge> : <Badge tone="ok">on plan</Badge>}
        {overCost && <Badge tone="warn">over projected cost</Badge>}
      </td>
    </tr>
  );
}
