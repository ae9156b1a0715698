import { useEffect, useState } from 'preact/hooks';
import { createParser } from 'eventsource-parser';
import { api, authHeaders, ok, when, type Schemas } from '../api';
import { ErrorNote, Section } from '../components/ui';
import type { ProjectView } from '../project';

const KEEP = 200;

/**
 * Governance events: the latest page, then live over SSE (GET /v1/governance/events/stream,
 * resumed with Last-Event-ID after a drop). fetch + eventsource-parser rather than EventSource,
 * which cannot send the Authorization header.
 */
export function Events({ project }: { project: ProjectView }) {
  const [events, setEvents] = useState<Schemas['GovernanceEvent'][]>([]);
  const [live, setLive] = useState<'connecting' | 'live' | 'retrying'>('connecting');
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    const abort = new AbortController();
    let lastId: string | null = null;
    const add = (ev: Schemas['GovernanceEvent']) => setEvents((prev) => [ev, ...prev.filter((p) => p.id !== ev.id)].slice(0, KEEP));

    const follow = async () => {
      while (!abort.signal.aborted) {
        try {
          const res = await fetch('/v1/governance/events/stream', {
            headers: { ...(await authHeaders()), accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
            signal: abort.signal,
          });
          if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
          setLive('live');
          const parser = createParser({
            onEvent(msg) {
              if (msg.id) lastId = msg.id;
              if (msg.event && msg.event !== 'message') return;
              add(JSON.parse(msg.data) as Schemas['GovernanceEvent']);
            },
          });
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(value);
          }
        } catch (err) {
          if (abort.signal.aborted) return;
          setError(err);
        }
        setLive('retrying');
        await new Promise((r) => setTimeout(r, 2000));
      }
    };

    ok(api.GET('/v1/governance/events', { params: { query: { order: 'desc', limit: 50 } } }))
      .then((page) => setEvents(page.data))
      .catch(setError)
      .finally(() => void follow());
    return () => abort.abort();
  }, [project.id]);

  return (
    <Section title="Governance events" actions={<span class={`live ${live}`} role="status">{live === 'live' ? '● live' : live}</span>}>
      <ErrorNote error={error} />
      <table aria-live="polite">
        <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Model</th><th scope="col">Permit</th><th scope="col">Request</th></tr></thead>
        <tbody>
          {events.map((e) => (
            <tr key={e.id} data-event-type={e.event_type}>
              <td>{when(e.timestamp)}</td>
              <td>{e.event_type}</td>
              <td>{e.provider ? `${e.provider}/${e.model ?? ''}` : '—'}</td>
              <td>{e.permit_id ? <a href={`#/timeline/permit/${e.permit_id}`}>{e.permit_id}</a> : '—'}</td>
              <td>{e.request_id ? <a href={`#/timeline/request/${e.request_id}`}>{e.request_id}</a> : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}
