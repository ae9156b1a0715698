import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiFailure } from '../api';

/** A failure from the API, announced to screen readers; validation issues listed by field. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const failure = error instanceof ApiFailure ? error : null;
  return (
    <div class="error" role="alert">
      <strong>{failure ? failure.code : 'error'}</strong>: {failure ? failure.message : String(error)}
      {failure && failure.issues.length > 0 && (
        <ul>
          {failure.issues.map((i) => (
            <li key={i.path}>
              <code>{i.path || '(body)'}</code> {i.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** Loads once per change of `deps`; `reload` fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | null; error: unknown; loading: boolean; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    load()
      .then((d) => live && (setData(d), setError(null)))
      .catch((e: unknown) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [...deps, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { data, error, loading, reload };
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section aria-labelledby={`h-${title}`}>
      <div class="section-head">
        <h2 id={`h-${title}`}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Badge({ tone, children }: { tone: 'ok' | 'warn' | 'bad' | 'info'; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}
