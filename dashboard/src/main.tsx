import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { api, hasSession, ok, selectProject, signedInEmail, signOut, whenSignedOut } from './api';
import { ErrorNote } from './components/ui';
import type { ProjectView } from './project';
import { CallView, Calls } from './pages/Calls';
import { Events } from './pages/Events';
import { Governance } from './pages/Governance';
import { Intents } from './pages/Intents';
import { Jobs } from './pages/Jobs';
import { Keys } from './pages/Keys';
import { Overview } from './pages/Overview';
import { Policy } from './pages/Policy';
import { Providers } from './pages/Providers';
import { Reviews } from './pages/Reviews';
import { SignIn } from './pages/SignIn';
import { Spend } from './pages/Spend';
import { Timeline } from './pages/Timeline';

const PAGES = [
  ['calls', 'Calls'],
  ['overview', 'Overview'],
  ['governance', 'Governance'],
  ['spend', 'Spend'],
  ['keys', 'API keys'],
  ['providers', 'Provider keys'],
  ['policy', 'Policy'],
  ['reviews', 'Reviews'],
  ['intents', 'Intents'],
  ['timeline', 'Timeline'],
  ['events', 'Live events'],
  ['jobs', 'Jobs and webhooks'],
] as const;
type Page = (typeof PAGES)[number][0];

const PROJECT_KEY = 'tollgate.project';

/** `#/<page>/<rest…>?<query>`: the query carries a page's filters, so a view can be shared. */
function parseHash(): { page: Page; rest: string[]; query: URLSearchParams } {
  const [path, query = ''] = window.location.hash.replace(/^#\/?/, '').split('?', 2);
  const [page, ...rest] = path.split('/');
  const known = PAGES.some(([p]) => p === page);
  return { page: known ? (page as Page) : 'calls', rest: rest.map(decodeURIComponent), query: new URLSearchParams(query) };
}

function useHash() {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const on = () => setRoute(parseHash());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function App() {
  const [signedIn, setSignedIn] = useState(hasSession());
  useEffect(() => whenSignedOut(() => setSignedIn(false)), []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  return <Console />;
}

function Console() {
  const route = useHash();
  const [projects, setProjects] = useState<ProjectView[] | null>(null);
  const user = signedInEmail();
  const [current, setCurrent] = useState<string | null>(sessionStorage.getItem(PROJECT_KEY));
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    ok(api.GET('/v1/projects'))
      .then((list) => {
        const mine = list.data.filter((p) => p.role !== null) as ProjectView[];
        setProjects(mine);
        setCurrent((c) => (c && mine.some((p) => p.id === c) ? c : (mine[0]?.id ?? null)));
      })
      .catch(setError);
  }, []);

  const project = projects?.find((p) => p.id === current) ?? null;
  selectProject(project?.id ?? null);
  const choose = (id: string) => {
    sessionStorage.setItem(PROJECT_KEY, id);
    setCurrent(id);
  };

  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={skipToMain}>
        Skip to content
      </a>
      <header>
        <span class="brand">Tollgate</span>
        {projects && projects.length > 0 && (
          <label>
            Project
            <select name="project" value={current ?? ''} onChange={(e) => choose(e.currentTarget.value)}>
              {projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name} ({p.role})
                </option>
              ))}
            </select>
          </label>
        )}
        <span class="muted">{user}</span>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <nav aria-label="Sections">
        <ul>
          {PAGES.map(([p, label]) => (
            <li key={p}>
              <a href={`#/${p}`} aria-current={route.page === p ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <h1>{PAGES.find(([p]) => p === route.page)?.[1]}</h1>
        <ErrorNote error={error} />
        {projects && projects.length === 0 && <p>You are not a member of any project yet.</p>}
        {project && <PageView page={route.page} rest={route.rest} query={route.query} project={project} user={user} />}
      </main>
    </div>
  );
}

/** The skip link moves focus without touching the hash, which holds the page route. */
function skipToMain(e: Event): void {
  e.preventDefault();
  document.getElementById('main')?.focus();
}

function PageView({ page, rest, query, project, user }: { page: Page; rest: string[]; query: URLSearchParams; project: ProjectView; user: string }) {
  switch (page) {
    case 'calls':
      // Keyed by the call: another call's view is not kept (with its data) while this one loads.
      return rest[0] ? <CallView key={rest[0]} id={rest[0]} /> : <Calls project={project} query={query} />;
    case 'overview':
      return <Overview project={project} query={query} />;
    case 'governance':
      return <Governance project={project} query={query} />;
    case 'spend':
      return <Spend project={project} />;
    case 'keys':
      return <Keys project={project} />;
    case 'providers':
      return <Providers project={project} />;
    case 'policy':
      return <Policy project={project} />;
    case 'reviews':
      return <Reviews project={project} user={user || 'dashboard user'} query={query} />;
    case 'intents':
      return <Intents project={project} />;
    case 'timeline':
      return <Timeline kind={rest[0] === 'permit' ? 'permit' : 'request'} id={rest[1] ?? null} />;
    case 'events':
      return <Events project={project} />;
    case 'jobs':
      return <Jobs project={project} />;
  }
}

render(<App />, document.getElementById('app')!);
