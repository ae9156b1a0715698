import { useEffect, useState } from 'preact/hooks';
import { api, ok, usd, when, type Schemas } from '../api';
import { Badge, Empty, ErrorNote, Section, useLoad } from '../components/ui';
import type { ProjectView } from '../project';

type Call = Schemas['Call'];

/** The filters of GET /v1/calls that the page offers; they live in the URL (#/calls?status=failed…). */
const FILTERS = ['status', 'provider', 'model', 'key_id', 'workflow_id', 'session_id', 'route', 'created_at_gte', 'created_at_lte'] as const;
type Filter = (typeof FILTERS)[number];
type Filters = Partial<Record<Filter, string>>;

/** How often the newest page is fetched again, so calls appear as they arrive. */
const LIVE_MS = 3000;

function filtersOf(query: URLSearchParams): Filters {
  const f: Filters = {};
  for (const k of FILTERS) {
    const v = query.get(k);
    if (v) f[k] = v;
  }
  return f;
}

function hashOf(f: Filters): string {
  const q = new URLSearchParams(Object.entries(f).filter(([, v]) => v) as [string, string][]).toString();
  return `#/calls${q ? `?${q}` : ''}`;
}

/**
 * A select's options, the URL's choice selected. The form is not controlled: the live reload
 * re-renders the page every few seconds and must not undo a choice not yet applied.
 */
function Options({ values, chosen }: { values: string[]; chosen: string | undefined }) {
  return (
    <>
      <option value="" selected={!chosen}>any</option>
      {values.map((v) => <option key={v} value={v} selected={chosen === v}>{v}</option>)}
    </>
  );
}

/** The review queue, opened at one permit. */
const reviewHref = (permitId: string) => `#/reviews?permit=${encodeURIComponent(permitId)}`;

const tone = (s: Call['status']) => (s === 'completed' ? 'ok' : s === 'denied' ? 'warn' : 'bad');

/** The request log: the project's calls, newest first, live on the first page; filters in the URL. */
export function Calls({ project, query }: { project: ProjectView; query: URLSearchParams }) {
  const filters = filtersOf(query);
  const key = JSON.stringify(filters);
  // Cursors of the pages before the one shown (empty: the newest page, which stays live).
  const [trail, setTrail] = useState<string[]>([]);
  const cursor = trail[trail.length - 1];
  useEffect(() => setTrail([]), [key, project.id]);
  const page = useLoad(
    () => ok(api.GET('/v1/calls', { params: { query: { ...(filters as Record<string, string>), limit: 50, ...(cursor ? { cursor } : {}) } } })),
    [key, project.id, cursor],
  );
  // The latest review permits: a denied call whose permit is one of them links to its review.
  const reviews = useLoad(() => ok(api.GET('/v1/permits', { params: { query: { decision: 'review', limit: 100 } } })), [key, project.id, cursor, page.data]);
  const inReview = new Set(reviews.data?.data.map((p) => p.id) ?? []);
  useEffect(() => {
    if (cursor) return;
    const t = setInterval(page.reload, LIVE_MS);
    return () => clearInterval(t);
  }, [cursor, page.reload]);

  const apply = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const next: Filters = {};
    for (const k of FILTERS) {
      const v = String(form.get(k) ?? '').trim();
      if (v) next[k] = v;
    }
    window.location.hash = hashOf(next);
  };

  return (
    <Section
      title="Calls"
      actions={<span class="muted">{cursor ? 'older calls' : 'live: newest first'}</span>}
    >
      <form class="inline filters" onSubmit={apply} key={key} aria-label="Filter calls">
        <label>
          Status
          <select name="status">
            <Options values={['completed', 'failed', 'denied']} chosen={filters.status} />
          </select>
        </label>
        <label>
          Provider
          <select name="provider">
            <Options values={['openai', 'anthropic', 'google', 'deepseek', 'mistral']} chosen={filters.provider} />
          </select>
        </label>
        <label>
          Route
          <select name="route">
            <Options values={['executions', 'execute', 'proxy', 'sessions']} chosen={filters.route} />
          </select>
        </label>
        <label>
          Model
          <input name="model" defaultValue={filters.model ?? ''} placeholder="gpt-4o-mini" />
        </label>
        <label>
          Key
          <input name="key_id" defaultValue={filters.key_id ?? ''} placeholder="key_…" />
        </label>
        <label>
          Workflow
          <input name="workflow_id" defaultValue={filters.workflow_id ?? ''} />
        </label>
        <label>
          Session
          <input name="session_id" defaultValue={filters.session_id ?? ''} placeholder="sess_…" />
        </label>
        <label>
          From
          <input name="created_at_gte" defaultValue={filters.created_at_gte ?? ''} placeholder="2026-01-01T00:00:00Z" />
        </label>
        <label>
          To
          <input name="created_at_lte" defaultValue={filters.created_at_lte ?? ''} placeholder="2026-01-31T23:59:59Z" />
        </label>
        <button type="submit">Filter</button>
        {Object.keys(filters).length > 0 && <a href="#/calls">Clear</a>}
      </form>
      <ErrorNote error={page.error} />
      {page.data && page.data.data.length === 0 && <Empty>No calls{Object.keys(filters).length ? ' match these filters' : ' yet'}.</Empty>}
      {page.data && page.data.data.length > 0 && (
        <table aria-label="Calls">
          <thead>
            <tr>
              <th scope="col">Time</th><th scope="col">Status</th><th scope="col">Route</th><th scope="col">Model</th>
              <th scope="col">Tokens in/out</th><th scope="col">Cost</th><th scope="col">Latency</th><th scope="col">Key</th><th scope="col">Workflow</th>
            </tr>
          </thead>
          <tbody>
            {page.data.data.map((c) => (
              <tr key={c.id}>
                <td><a href={`#/calls/${encodeURIComponent(c.id)}`}>{when(c.created_at)}</a></td>
                <td>
                  <Badge tone={tone(c.status)}>{c.status} {c.status_code}</Badge>{c.error && <span class="muted"> {c.error.code}</span>}
                  {c.status === 'denied' && c.permit_id && inReview.has(c.permit_id) && <> · <a href={reviewHref(c.permit_id)}>review</a></>}
                </td>
                <td>{c.route}</td>
                <td>{c.provider ? `${c.provider}/${c.model ?? ''}` : '—'}</td>
                <td>{c.usage.input_tokens}/{c.usage.output_tokens}</td>
                <td>{usd(c.usage.cost_usd_micros)}</td>
                <td>{c.duration_ms} ms</td>
                <td class="muted">{c.key_id ?? '—'}</td>
                <td>{c.workflow_id ? <a href={`#/intents`}>{c.workflow_id}</a> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="inline">
        {trail.length > 0 && <button type="button" onClick={() => setTrail([])}>Newest</button>}
        {page.data?.next_cursor && <button type="button" onClick={() => setTrail((t) => [...t, page.data!.next_cursor!])}>Older</button>}
      </div>
    </Section>
  );
}

/** One call: its summary and its timeline, replayed from persisted records. */
export function CallView({ id }: { id: string }) {
  const call = useLoad(() => ok(api.GET('/v1/calls/{call_id}', { params: { path: { call_id: id } } })), [id]);
  const timeline = useLoad(() => ok(api.GET('/v1/requests/{request_id}/timeline', { params: { path: { request_id: id } } })), [id]);
  const c = call.data;
  const deniedPermit = c?.status === 'denied' ? c.permit_id : null;
  const permit = useLoad(
    () => (deniedPermit ? ok(api.GET('/v1/permits/{permit_id}', { params: { path: { permit_id: deniedPermit } } })) : Promise.resolve(null)),
    [deniedPermit],
  );
  const p = permit.data;
  return (
    <Section title={`Call ${id}`} actions={<a href="#/calls">All calls</a>}>
      <ErrorNote error={call.error} />
      {c && (
        <dl class="facts" aria-label="Call">
          <dt>Status</dt><dd><Badge tone={tone(c.status)}>{c.status} {c.status_code}</Badge>{c.error && ` ${c.error.code}`}</dd>
          <dt>Route</dt><dd>{c.route} · {c.operation} · {c.mode}</dd>
          <dt>Model</dt><dd>{c.provider ? `${c.provider}/${c.model ?? ''}` : '—'}</dd>
          <dt>Tokens</dt><dd>{c.usage.input_tokens} in, {c.usage.output_tokens} out{c.usage.estimated_final ? ' (estimated)' : ''}</dd>
          <dt>Cost</dt><dd>{usd(c.usage.cost_usd_micros)}</dd>
          <dt>Started</dt><dd>{when(c.created_at)}</dd>
          <dt>Latency</dt><dd>{c.duration_ms} ms</dd>
          <dt>Permit</dt><dd>{c.permit_id ? <a href={`#/timeline/permit/${encodeURIComponent(c.permit_id)}`}>{c.permit_id}</a> : '—'}</dd>
          {p && (
            <>
              <dt>Decision</dt>
              <dd>
                {p.decision} · {p.reason_code}
                {p.decision === 'review' && <> · <a href={reviewHref(p.id)}>{p.status === 'pending_review' ? 'Review it' : `Review: ${p.status.replace('_', ' ')}`}</a></>}
              </dd>
            </>
          )}
          <dt>Key</dt><dd>{c.key_id ?? '—'}</dd>
          <dt>Workflow</dt><dd>{c.workflow_id ?? '—'}</dd>
          <dt>Job</dt><dd>{c.job_id ?? '—'}</dd>
          <dt>Session</dt><dd>{c.session_id ? <a href={`#/calls?session_id=${encodeURIComponent(c.session_id)}`}>{c.session_id}</a> : '—'}</dd>
        </dl>
      )}
      {timeline.data && <Waterfall events={timeline.data.events} />}
      <h3>Timeline</h3>
      <ErrorNote error={timeline.error} />
      {timeline.data && (
        <ol class="timeline" aria-label={`Timeline of ${id}`}>
          {timeline.data.events.map((ev, i) => (
            <li key={i}>
              <time dateTime={ev.timestamp}>{when(ev.timestamp)}</time> <strong>{ev.event_type}</strong>{' '}
              <span class="muted">{ev.phase}{ev.provider ? ` · ${ev.provider}/${ev.model ?? ''}` : ''}</span>
              {typeof ev.metadata.reason_code === 'string' && <span> · {ev.metadata.reason_code}</span>}
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}

type TimelineEvent = Schemas['TimelineEvent'];

interface Bar {
  label: string;
  start: number;
  end: number;
  tone: 'ok' | 'warn' | 'bad' | 'info';
  note?: string;
}

/**
 * Where a call's time went, from its timeline: governance (the request to its first provider
 * request), one bar per provider attempt (a fallback is a bar of its own), recording (the last
 * answer to completion); a denial is a mark with its reason code.
 */
function barsOf(events: TimelineEvent[]): Bar[] {
  const t = (e: TimelineEvent) => Date.parse(e.timestamp);
  if (events.length === 0) return [];
  const t0 = Math.min(...events.map(t));
  const bars: Bar[] = [];
  const sent = events.filter((e) => e.event_type === 'provider.request_sent');
  const received = events.filter((e) => e.event_type === 'provider.response_received');
  const end = events.find((e) => e.event_type === 'request.completed' || e.event_type === 'request.errored' || e.event_type === 'request.denied');
  const firstSent = sent[0];
  bars.push({ label: 'governance', start: t0, end: firstSent ? t(firstSent) : end ? t(end) : t0, tone: 'info' });
  sent.forEach((s, i) => {
    const attempt = s.metadata.attempt ?? i + 1;
    const r = received.find((x) => (x.metadata.attempt ?? 1) === attempt) ?? received[i];
    const ok = r?.metadata.ok === true;
    bars.push({ label: `attempt ${attempt}: ${s.provider ?? ''}/${s.model ?? ''}`, start: t(s), end: r ? t(r) : t(s), tone: r ? (ok ? 'ok' : 'bad') : 'warn', note: r ? (ok ? String(r.metadata.status ?? 'ok') : String(r.metadata.failure_kind ?? r.metadata.status ?? 'failed')) : 'no answer' });
  });
  const lastReceived = received[received.length - 1];
  if (end && lastReceived) bars.push({ label: 'recording', start: t(lastReceived), end: t(end), tone: 'info' });
  const denial = events.find((e) => e.event_type === 'request.denied' || e.event_type === 'permit.denied');
  if (denial) bars.push({ label: 'denied', start: t(denial), end: t(denial), tone: 'warn', note: String(denial.metadata.reason_code ?? '') });
  return bars;
}

function Waterfall({ events }: { events: TimelineEvent[] }) {
  const bars = barsOf(events);
  if (bars.length === 0) return null;
  const t0 = Math.min(...bars.map((b) => b.start));
  const span = Math.max(1, Math.max(...bars.map((b) => b.end)) - t0);
  return (
    <figure class="waterfall">
      <figcaption>Where the time went ({span} ms)</figcaption>
      <ol aria-label="Waterfall">
        {bars.map((b, i) => (
          <li key={i} data-bar={b.label}>
            <span class="bar-label">{b.label}</span>
            <span class="bar-track">
              <span class={`bar ${b.tone}`} style={{ left: `${((b.start - t0) / span) * 100}%`, width: `${Math.max(0.5, ((b.end - b.start) / span) * 100)}%` }} />
            </span>
            <span class="muted">{b.end - b.start} ms{b.note ? ` · ${b.note}` : ''}</span>
          </li>
        ))}
      </ol>
    </figure>
  );
}
