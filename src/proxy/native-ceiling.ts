/**
 * Hard caps on the proxies: the output-token ceiling governance set or lowered, written into the
 * native body's own field before it goes upstream (the only change made to a passed-through body
 * besides a same-provider target model).
 */
import type { ProviderId } from '../config';
import { CEILING_FIELDS } from './infer';

type Json = Record<string, unknown>;

function setPath(body: Json, path: string[], value: number): Json {
  const [head, ...rest] = path;
  if (rest.length === 0) return { ...body, [head]: value };
  const inner = body[head];
  return { ...body, [head]: setPath(inner !== null && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Json) : {}, rest, value) };
}

function hasPath(body: Json, path: string[]): boolean {
  let v: unknown = body;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Json)[k] : undefined;
  return v !== undefined && v !== null;
}

/** The field to add when the body sets none: the one each provider's current API documents. */
function defaultField(provider: ProviderId, pathname: string): string[] {
  if (provider === 'openai') return pathname.replace(/\/+$/, '') === '/v1/responses' ? ['max_output_tokens'] : ['max_completion_tokens'];
  if (provider === 'google') return ['generationConfig', 'maxOutputTokens'];
  return ['max_tokens'];
}

/** Every ceiling field the body carries set to `ceiling` (never above what the caller asked: governance only lowers), or the provider's field added. */
export function withNativeCeiling(provider: ProviderId, pathname: string, body: Json, ceiling: number): Json {
  const present = CEILING_FIELDS[provider].filter((p) => hasPath(body, p));
  let out = body;
  for (const p of present.length ? present : [defaultField(provider, pathname)]) out = setPath(out, p, ceiling);
  return out;
}
