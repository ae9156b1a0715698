import { useEffect, useState } from 'preact/hooks';
import { api, ok, when, type Schemas } from '../api';
import { ErrorNote, Section } from '../components/ui';

type Kind = 'request' | 'permit';

/** A request's or permit's timeline, replayed from persisted records. The id comes from the URL (#/timeline/<kind>/<id>) or the form. */
export function Timeline({ kind, id }: { kind: Kind; id: string | null }) {
  const [input, setInput] = useState(id ?? '');
  const [inputKind, setInputKind] = useState<Kind>(kind);
  const [events, setEvents] = useState<Schemas['TimelineEvent'][] | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    setInput(id ?? '');
    setInputKind(kind);
    setEvents(null);
    setError(null);
    if (!id) return;
    const load = kind === 'permit'
      ? ok(api.GET('/v1/permits/{permit_id}/timeline', { params: { path: { permit_id: id } } }))
      : ok(api.GET('/v1/requests/{request_id}/timeline', { params: { path: { request_id: id } } }));
    load.then((t) => setEvents(t.events)).catch(setError);
  }, [kind, id]);

  const open = (e: Event) => {
    e.preventDefault();
    const value = input.trim();
    if (!value) return;
    const k: Kind = value.startsWith('pmt_') || value.startsWith('permit_') ? 'permit' : inputKind;
    window.location.hash = `#/timeline/${k}/${encodeURIComponent(value)}`;
  };

  return (
    <Section title="Request timeline">
      <form class="inline" onSubmit={open}>
        <label>
          Kind
          <select name="timeline-kind" value={inputKind} onChange={(e) => setInputKind(e.currentTarget.value as Kind)}>
            <option value="request">request id</option>
            <option value="permit">permit id</option>
          </select>
        </label>
        <label>
          Id
          <input name="timeline-id" required value={input} onInput={(e) => setInput(e.currentTarget.value)} placeholder="req_… or a permit id" />
        </label>
        <button type="submit">Open timeline</button>
      </form>
      <ErrorNote error={error} />
      {events && (
        <ol class="timeline" aria-label={`Timeline of ${id}`}>
          {events.map((ev, i) => (
            <li key={i}>
              <time dateTime={ev.timestamp}>{when(ev.timestamp)}</time> <strong>{ev.event_type}</strong> <span class="muted">{ev.phase} · {ev.source}{ev.provider ? ` · ${ev.provider}/${ev.model ?? ''}` : ''}</span>
              {Object.keys(ev.metadata).length > 0 && (
                <details>
                  <summary>metadata</summary>
                  <pre>{JSON.stringify(ev.metadata, null, 2)}</pre>
                </details>
              )}
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}
