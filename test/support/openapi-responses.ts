/**
 * Every end-to-end response checked against the OpenAPI document (src/api/openapi.ts), so the
 * document cannot drift from what the server answers without a test failing. Hooked into the
 * shared HTTP helper (test/support/tollgate.ts `http`), so every e2e test that calls through it is
 * covered without naming it. A response fails when its route is not documented, when its status is
 * not documented (and no `default` covers it), or when a JSON body does not match the schema.
 * Streams (SSE), NDJSON and binary bodies are not parsed here.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '../../src/api/openapi';

type Operation = { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };
type Doc = { paths: Record<string, Record<string, Operation>> };

let state: { doc: Doc; ajv: Ajv2020; templates: { template: string; regex: RegExp; params: number }[]; compiled: Map<string, ValidateFunction> } | null = null;

function load() {
  if (state) return state;
  const doc = buildOpenApiDocument() as unknown as Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(doc as object, 'openapi');
  const templates = Object.keys(doc.paths)
    .map((template) => ({
      template,
      params: (template.match(/\{/g) ?? []).length,
      regex: new RegExp(
        '^' +
          template
            .split(/(\{[^}]+\})/)
            .map((part) => (part === '{native_path}' ? '.+' : part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
            .join('') +
          '$',
      ),
    }))
    // Fixed segments win over parameters (/v1/permits/export before /v1/permits/{permit_id}).
    .sort((a, b) => a.params - b.params);
  state = { doc, ajv, templates, compiled: new Map() };
  return state;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** The problems of one response against the document; empty when it conforms. */
export function responseProblems(method: string, url: string, status: number, contentType: string | null, body: unknown): string[] {
  const path = new URL(url, 'http://x').pathname;
  if (!path.startsWith('/v1/')) return [];
  const { doc, ajv, templates, compiled } = load();
  const m = method.toLowerCase();
  const match = templates.find((t) => t.regex.test(path) && doc.paths[t.template]![m]);
  const label = `${method.toUpperCase()} ${path} → ${status}`;
  if (!match) {
    // Unknown routes answer 404/405 in the error shape; a 2xx on an undocumented route is drift.
    return status < 400 ? [`${label}: route not in the OpenAPI document`] : [];
  }
  const op = doc.paths[match.template]![m]!;
  // A success status must be documented as such; failures fall back to `default` (the error shape).
  const key = op.responses[String(status)] ? String(status) : status >= 400 && op.responses.default ? 'default' : null;
  if (!key) return status >= 400 ? [] : [`${label}: status not documented for ${m.toUpperCase()} ${match.template}`];
  const content = op.responses[key]!.content;
  if (!content || !contentType?.includes('json') || body === undefined) return [];
  const mediaType = Object.keys(content).find((t) => t.includes('json'));
  if (!mediaType) return [`${label}: answered JSON, documented as ${Object.keys(content).join(', ')}`];
  const ref = `openapi#/${pointer('paths', match.template, m, 'responses', key, 'content', mediaType, 'schema')}`;
  let validate = compiled.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    compiled.set(ref, validate);
  }
  if (validate(body)) return [];
  return [`${label}: body does not match the document (${ajv.errorsText(validate.errors, { separator: '; ' })})`];
}

/** Throws with every problem, so the e2e test that made the call fails where it made it. */
export function assertDocumentedResponse(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
  const problems = responseProblems(method, url, status, contentType, body);
  if (problems.length) throw new Error(`OpenAPI drift: ${problems.join('\n')}`);
}
