/**
 * Fuzz cases for one route: a body (valid-shaped from the route's JSON Schema, mutated, or
 * byte-mutated), a query, path parameters (real ids or hostile strings) and a key; and sending one.
 */
import fc from 'fast-check';
import { arbitraryFromSchema, JsonSchema } from './json-schema-arbitrary';
import { byteMutation, hostileString, mutateBytes, mutated } from './hostile';
import { fillPath, Fixtures } from './fixtures';
import { pathParams, FuzzRoute } from './route-list';
import type { Answer } from './answers';

export interface FuzzCase {
  path: string;
  body?: Buffer;
  bodySummary: string;
  contentType: string;
  key: 'admin' | 'client' | 'none';
}

const msg = { type: 'object', properties: { role: { enum: ['user', 'assistant', 'system'] }, content: { type: 'string' } }, required: ['role', 'content'] };
/** Provider-native bodies have no zod schema in Tollgate (they are forwarded); these are their outlines. */
const NATIVE_BODIES: Record<string, JsonSchema> = {
  openai: { type: 'object', properties: { model: { enum: ['gpt-4o-mini', 'gpt-4o', 'nope'] }, messages: { type: 'array', items: msg as JsonSchema, minItems: 1 }, max_tokens: { type: 'integer', minimum: 1, maximum: 4096 }, stream: { type: 'boolean' }, temperature: { type: 'number', minimum: 0, maximum: 2 } }, required: ['model', 'messages'] },
  anthropic: { type: 'object', properties: { model: { enum: ['claude-haiku-4-5', 'claude-sonnet-4-5', 'nope'] }, messages: { type: 'array', items: msg as JsonSchema, minItems: 1 }, max_tokens: { type: 'integer', minimum: 1, maximum: 4096 }, system: { type: 'string' } }, required: ['model', 'messages', 'max_tokens'] },
  google: { type: 'object', properties: { contents: { type: 'array', minItems: 1, items: { type: 'object', properties: { role: { enum: ['user', 'model'] }, parts: { type: 'array', items: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } } }, required: ['parts'] } }, generationConfig: { type: 'object', properties: { maxOutputTokens: { type: 'integer', minimum: 1, maximum: 4096 } } } }, required: ['contents'] },
};
NATIVE_BODIES.deepseek = { ...NATIVE_BODIES.openai, properties: { ...NATIVE_BODIES.openai.properties, model: { enum: ['deepseek-chat', 'nope'] } } };
NATIVE_BODIES.mistral = { ...NATIVE_BODIES.openai, properties: { ...NATIVE_BODIES.openai.properties, model: { enum: ['mistral-small-latest', 'nope'] } } };

export function bodySchemaOf(route: FuzzRoute): JsonSchema | undefined {
  if (route.body) return route.body;
  const provider = /^\/v1\/proxy\/([a-z]+)\//.exec(route.path)?.[1];
  return provider && route.method === 'post' ? NATIVE_BODIES[provider] : undefined;
}

/** A body: valid-shaped (40%), one node hostile (35%), a byte mutation (20%), any JSON (5%). */
export function bodyArb(schema: JsonSchema): fc.Arbitrary<{ bytes: Buffer; summary: string }> {
  const valid = arbitraryFromSchema(schema);
  const asJson = (kind: string) => (v: unknown) => {
    const text = JSON.stringify(v) ?? 'null';
    return { bytes: Buffer.from(text), summary: `${kind} ${text.length > 300 ? `${text.slice(0, 300)}… (${text.length} chars)` : text}` };
  };
  return fc.oneof(
    { weight: 8, arbitrary: valid.map(asJson('valid-shaped')) },
    { weight: 7, arbitrary: mutated(valid).map(asJson('mutated')) },
    {
      weight: 4,
      arbitrary: fc.tuple(valid, byteMutation, fc.double({ min: 0, max: 1, noNaN: true }), fc.nat()).map(([v, how, at, variant]) => {
        const text = JSON.stringify(v) ?? 'null';
        const bytes = mutateBytes(text, how, at, variant);
        return { bytes, summary: `${how}(${at.toFixed(3)},${variant}) of ${text.slice(0, 200)} → ${JSON.stringify(bytes.toString('latin1').slice(0, 300))}` };
      }),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(asJson('any JSON')) },
  );
}

function queryArb(schema: JsonSchema | undefined): fc.Arbitrary<string> {
  if (!schema) return fc.option(fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 20 }), { maxKeys: 2 }), { freq: 4 }).map((d) => (d ? new URLSearchParams(d).toString() : ''));
  const valid = arbitraryFromSchema(schema) as fc.Arbitrary<Record<string, unknown>>;
  const shortHostile = hostileString.map((s) => s.slice(0, 2000));
  return fc.tuple(valid, fc.option(fc.tuple(fc.nat(), fc.oneof(shortHostile, fc.string({ maxLength: 30 }))), { freq: 2 })).map(([q, bad]) => {
    const entries: Array<[string, string]> = Object.entries(q ?? {}).flatMap(([k, v]): Array<[string, string]> =>
      Array.isArray(v) ? v.map((x) => [k, String(x)]) : [[k, typeof v === 'object' ? JSON.stringify(v) : String(v)]],
    );
    if (bad) {
      const [i, value] = bad;
      if (entries.length) entries[i % entries.length][1] = value;
      else entries.push(['unexpected', value]);
    }
    return new URLSearchParams(entries).toString();
  });
}

/** Percent-encodes the UTF-8 bytes (a lone surrogate becomes U+FFFD; encodeURIComponent throws on it). */
function percentEncode(s: string): string {
  return [...Buffer.from(s)].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`)).join('');
}

/** A path parameter: the fixture's id (most cases) or a hostile string. */
const paramOverride = fc.option(fc.oneof(fc.string({ maxLength: 40 }), hostileString.map((s) => s.slice(0, 1500)), fc.constantFrom('0', '-1', '99999999999999999999', '1e3', 'null', '%', '..', 'exec_req_00000000000000000000000000')), { freq: 3 });

export function caseArb(route: FuzzRoute, ids: Fixtures): fc.Arbitrary<FuzzCase> {
  const schema = bodySchemaOf(route);
  const params = pathParams(route.path).filter((p) => p !== 'native_path');
  const isProxy = route.path.startsWith('/v1/proxy/');
  const contentTypes = isProxy ? fc.constant('application/json') : fc.constantFrom('application/json', 'application/json', 'application/json', 'application/json', 'application/json', 'application/json', 'text/plain', 'application/merge-patch+json', 'application/json; charset=utf-16');
  return fc
    .record({
      overrides: fc.tuple(...params.map(() => paramOverride)),
      query: queryArb(route.query),
      body: schema ? bodyArb(schema) : fc.constant(undefined),
      contentType: contentTypes,
      key: fc.constantFrom<FuzzCase['key']>('admin', 'admin', 'admin', 'admin', 'client', 'none'),
    })
    .map(({ overrides, query, body, contentType, key }) => {
      const byName = Object.fromEntries(params.map((p, i) => [p, overrides[i] === null ? undefined : percentEncode(overrides[i] as string)]));
      const path = fillPath(route.path, route.method, ids, (n) => byName[n] ?? (ids[n] === undefined ? 'no-fixture' : undefined)) + (query ? `?${query}` : '');
      return { path, body: body?.bytes, bodySummary: body?.summary ?? 'no body', contentType, key };
    });
}

export interface Keys {
  admin: string;
  client: string;
}

/** Sends a case; streaming answers (SSE) are read only to their status and first bytes. */
export async function send(baseUrl: string, method: string, c: FuzzCase, keys: Keys): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (c.key !== 'none') headers.authorization = `Bearer ${keys[c.key]}`;
  if (c.body) headers['content-type'] = c.contentType;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 60_000);
  try {
    const res = await fetch(baseUrl + c.path, { method: method.toUpperCase(), headers, body: c.body, signal: abort.signal });
    let text: string;
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream') && method === 'get') {
      abort.abort();
      text = '';
    } else {
      text = await res.text();
    }
    return { method: method.toUpperCase(), path: c.path, status: res.status, text, bodySummary: c.bodySummary };
  } finally {
    clearTimeout(timer);
  }
}
