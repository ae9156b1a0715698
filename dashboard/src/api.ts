/**
 * The dashboard's connection to Tollgate: the typed client generated from the OpenAPI document
 * (sdk/src/schema.d.ts, through openapi-fetch) with the member's session. The access token lives in
 * memory only; the refresh token in sessionStorage, so a reload in the same tab stays signed in and
 * closing the tab signs out. Every request carries the selected project in Tollgate-Project, which
 * the routes flagged `members` need and the others ignore.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from '../../sdk/src/schema';

export type Schemas = components['schemas'];

const REFRESH_KEY = 'tollgate.refresh_token';
const EMAIL_KEY = 'tollgate.email';

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
  }
  /** Validation issues by field path (400 validation_error). */
  get issues(): { path: string; message: string }[] {
    const issues = this.details.issues;
    return Array.isArray(issues) ? (issues as { path: string; message: string }[]) : [];
  }
}

let access: { token: string; expiresAt: number } | null = null;
let refreshing: Promise<string | null> | null = null;
let selectedProject: string | null = null;
let onSignedOut: () => void = () => undefined;

export function selectProject(id: string | null): void {
  selectedProject = id;
}

export function whenSignedOut(fn: () => void): void {
  onSignedOut = fn;
}

export function hasSession(): boolean {
  return access !== null || sessionStorage.getItem(REFRESH_KEY) !== null;
}

async function failureOf(res: Response): Promise<ApiFailure> {
  const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | null;
  const e = body?.error;
  return new ApiFailure(res.status, e?.code ?? 'http_error', e?.message ?? `HTTP ${res.status}`, e?.details ?? {});
}

function keep(grant: Schemas['SessionGrant']): void {
  access = { token: grant.access_token, expiresAt: Date.now() + grant.expires_in * 1000 };
  sessionStorage.setItem(REFRESH_KEY, grant.refresh_token);
  sessionStorage.setItem(EMAIL_KEY, grant.user.email);
}

/** The signed-in user's e-mail (attestations name the person who signed off). */
export function signedInEmail(): string {
  return sessionStorage.getItem(EMAIL_KEY) ?? '';
}

async function exchange(body: object): Promise<Schemas['SessionGrant']> {
  const res = await fetch('/v1/auth/exchange', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw await failureOf(res);
  return (await res.json()) as Schemas['SessionGrant'];
}

export async function signIn(email: string, password: string): Promise<Schemas['SessionGrant']> {
  const grant = await exchange({ grant_type: 'password', email, password });
  keep(grant);
  return grant;
}

/** A valid access token, refreshed (one exchange at a time) within 30 s of expiry. */
async function accessToken(): Promise<string | null> {
  if (access && access.expiresAt - 30_000 > Date.now()) return access.token;
  const refreshToken = sessionStorage.getItem(REFRESH_KEY);
  if (!refreshToken) return null;
  refreshing ??= exchange({ grant_type: 'refresh_token', refresh_token: refreshToken })
    .then((grant) => {
      keep(grant);
      return grant.access_token;
    })
    .catch(() => {
      forget();
      return null;
    })
    .finally(() => {
      refreshing = null;
    });
  return refreshing;
}

function forget(): void {
  access = null;
  sessionStorage.removeItem(REFRESH_KEY);
  sessionStorage.removeItem(EMAIL_KEY);
  onSignedOut();
}

export async function signOut(): Promise<void> {
  const refreshToken = sessionStorage.getItem(REFRESH_KEY);
  if (refreshToken) {
    await fetch('/v1/auth/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: refreshToken }) }).catch(() => undefined);
  }
  forget();
}

export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use({
  async onRequest({ request }) {
    const token = await accessToken();
    if (token) request.headers.set('authorization', `Bearer ${token}`);
    if (selectedProject) request.headers.set('tollgate-project', selectedProject);
    return request;
  },
  async onResponse({ response }) {
    if (response.status === 401 && access) forget();
    return response;
  },
});

/** The data of an openapi-fetch result, or an ApiFailure with the error object's code and message. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) {
    const e = (error as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | undefined)?.error;
    throw new ApiFailure(response.status, e?.code ?? 'http_error', e?.message ?? `HTTP ${response.status}`, e?.details ?? {});
  }
  return data as T;
}

/** Headers for a raw fetch (the event stream), with the session and the project. */
export async function authHeaders(): Promise<Record<string, string>> {
  const token = await accessToken();
  return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(selectedProject ? { 'tollgate-project': selectedProject } : {}) };
}

export function usd(micros: number | null | undefined): string {
  if (micros === null || micros === undefined) return '—';
  return `$${(micros / 1_000_000).toFixed(micros < 10_000 ? 6 : 2)}`;
}

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '—';
}
