/**
 * The OpenAPI 3.1 document (GET /v1/openapi.json) and the reference page (GET /docs, Swagger UI
 * served from node_modules/swagger-ui-dist, no CDN).
 *
 * Routes are registered where they always were (src/api/routes/*); this module lists them with
 * their request schemas (the same zod objects the routes parse with) and their stability tier.
 * test/unit/api/openapi.test.ts walks the Koa router and fails when a /v1 route is neither listed
 * here nor in OPENAPI_EXCLUDED, so the document cannot drift silently. Tiers: docs/decisions.md,
 * "OpenAPI document".
 */
import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { executeRequestSchema, executionRequestSchema } from '../executions/schema';
import {
  attestSchema,
  evidenceSchema,
  exportQuerySchema,
  listQuerySchema,
  permitRequestSchema,
  revokeSchema,
  usageSchema,
} from '../permits/schemas';
import { createPolicySchema, updatePolicySchema } from '../policies/service';
import { PROXY_PROVIDERS } from '../proxy/service';
import * as complianceRoutes from './routes/compliance';
import * as eventRoutes from './routes/governance-events';
import * as integrityRoutes from './routes/integrity';
import * as jobRoutes from './routes/jobs';
import * as projectRoutes from './routes/projects';
import * as webhookRoutes from './routes/webhooks';
import * as workflowRoutes from './routes/workflows';

/** GA, Beta, Deprecated: the spec's commitments; Management: excluded from tiers (spec, "Versioning" 2). */
export type Stability = 'GA' | 'Beta' | 'Deprecated' | 'Management';
export type Method = 'get' | 'post' | 'patch' | 'delete';

export interface RouteDoc {
  method: Method;
  /** Koa style, `:param` segments. */
  path: string;
  stability: Stability;
  /** Release label from the spec's table; absent where the spec assigns none (tier decided here). */
  since?: string;
  auth: 'key' | 'admin' | 'public';
  summary: string;
  tag: string;
  body?: z.ZodType;
  query?: z.ZodType;
  /** Success status; 200 unless given. */
  status?: number;
  /** Success content type when it is not JSON. */
  contentType?: string;
}

const r = (
  method: Method,
  p: string,
  stability: Stability,
  since: string | undefined,
  auth: RouteDoc['auth'],
  tag: string,
  summary: string,
  extra: Partial<RouteDoc> = {},
): RouteDoc => ({ method, path: p, stability, since, auth, tag, summary, ...extra });

/** The spec numbers providers in Tollgate's provider order: openai, anthropic, google, deepseek, mistral. */
const PROXY_TIERS: Record<string, { stability: Stability; since: string }> = {
  openai: { stability: 'GA', since: 'v1.0' },
  anthropic: { stability: 'GA', since: 'v1.1' },
  google: { stability: 'Beta', since: 'v1.4' },
  deepseek: { stability: 'Beta', since: 'v1.5' },
  mistral: { stability: 'Beta', since: 'v1.4' },
};

export const OPENAPI_ROUTES: RouteDoc[] = [
  r('get', '/v1/public/status/summary', 'GA', 'v1.0', 'public', 'Status', 'Readiness of the database, Temporal and providers (503 when not ready)'),
  r('get', '/v1/openapi.json', 'Beta', undefined, 'public', 'Status', 'This document'),
  // Executions
  r('post', '/v1/executions', 'GA', 'v1.0', 'key', 'Executions', 'Governed execution (sync, or stream with Accept: text/event-stream)', { body: executionRequestSchema }),
  r('post', '/v1/execute', 'Beta', 'v1.3', 'key', 'Executions', 'Provider-shaped governed execution (sync only)', { body: executeRequestSchema }),
  r('get', '/v1/executions/:request_id', 'Beta', undefined, 'key', 'Executions', 'An execution envelope by request id'),
  r('get', '/v1/metrics/executions', 'Beta', undefined, 'key', 'Executions', 'Execution counts and latency for a window'),
  r('get', '/v1/requests/:request_id/timeline', 'Beta', 'v1.3', 'key', 'Timelines', 'Replayable timeline of a request'),
  r('get', '/v1/permits/:permit_id/timeline', 'Beta', undefined, 'key', 'Timelines', 'Timeline of a permit'),
  // Permits
  r('post', '/v1/permits', 'GA', 'v1.0', 'key', 'Permits', 'Request a permit (any decision answers 200)', { body: permitRequestSchema }),
  r('post', '/v1/permits/dry-run', 'Beta', 'v1.2', 'key', 'Permits', 'Evaluate a permit request without recording it', { body: permitRequestSchema }),
  r('get', '/v1/permits', 'GA', 'v1.0', 'key', 'Permits', 'List permits', { query: listQuerySchema }),
  r('get', '/v1/permits/export', 'Beta', 'v1.3', 'key', 'Permits', 'Export permits as NDJSON', { query: exportQuerySchema, contentType: 'application/x-ndjson' }),
  r('get', '/v1/permits/:permit_id', 'GA', 'v1.0', 'key', 'Permits', 'A permit'),
  r('get', '/v1/permits/:permit_id/bundle', 'GA', 'v1.1', 'key', 'Permits', 'Permit with its evidence, usage and signatures'),
  r('get', '/v1/permits/:permit_id/lineage', 'GA', 'v1.1', 'key', 'Permits', 'Permits linked to this one'),
  r('post', '/v1/permits/:permit_id/usage', 'Beta', 'v1.3', 'key', 'Permits', 'Report usage against a permit', { body: usageSchema }),
  r('get', '/v1/permits/:permit_id/usage', 'Beta', 'v1.3', 'key', 'Permits', 'Usage reported against a permit'),
  r('post', '/v1/permits/:permit_id/attest', 'Beta', undefined, 'admin', 'Permits', 'Attest a permit', { body: attestSchema, status: 201 }),
  r('post', '/v1/permits/:permit_id/revoke', 'Beta', undefined, 'admin', 'Permits', 'Revoke a permit', { body: revokeSchema }),
  r('get', '/v1/permits/:permit_id/evidence', 'Beta', undefined, 'key', 'Permits', 'Evidence attached to a permit'),
  r('post', '/v1/permits/:permit_id/evidence', 'Beta', undefined, 'key', 'Permits', 'Attach evidence to a permit', { body: evidenceSchema, status: 201 }),
  // Workflow intents: unassigned in the spec, Beta here (docs/decisions.md)
  r('post', '/v1/workflows', 'Beta', undefined, 'key', 'Workflow intents', 'Declare a workflow intent (201, or 200 on an idempotent repeat)', { body: workflowRoutes.declareSchema, status: 201 }),
  r('get', '/v1/workflows', 'Beta', undefined, 'key', 'Workflow intents', 'List workflow intents', { query: workflowRoutes.listSchema }),
  r('get', '/v1/workflows/:workflow_id', 'Beta', undefined, 'key', 'Workflow intents', 'A workflow intent'),
  r('post', '/v1/workflows/:workflow_id/amend', 'Beta', undefined, 'key', 'Workflow intents', 'Amend an intent (optimistic version)', { body: workflowRoutes.amendSchema }),
  r('post', '/v1/workflows/:workflow_id/complete', 'Beta', undefined, 'key', 'Workflow intents', 'Complete an intent', { body: workflowRoutes.completeSchema }),
  // Policies
  r('get', '/v1/policies', 'GA', 'v1.1', 'key', 'Policies', 'List policies'),
  r('post', '/v1/policies', 'GA', 'v1.1', 'admin', 'Policies', 'Create a policy', { body: createPolicySchema, status: 201 }),
  r('get', '/v1/policies/:policy_id', 'Beta', undefined, 'key', 'Policies', 'A policy'),
  r('patch', '/v1/policies/:policy_id', 'GA', 'v1.1', 'admin', 'Policies', 'Update a policy', { body: updatePolicySchema }),
  r('delete', '/v1/policies/:policy_id', 'GA', 'v1.1', 'admin', 'Policies', 'Delete a policy'),
  r('get', '/v1/policy-templates', 'Beta', 'v1.4', 'key', 'Policies', 'List policy templates'),
  r('get', '/v1/policy-templates/:template_id', 'Beta', 'v1.4', 'key', 'Policies', 'A policy template'),
  r('get', '/v1/projects/:project_id/policy', 'Management', undefined, 'admin', 'Projects', "The project's policy document"),
  r('patch', '/v1/projects/:project_id/policy', 'GA', 'v1.1', 'admin', 'Policies', "Merge-patch the project's policy document", {
    body: z.record(z.string(), z.unknown()).describe('JSON merge patch of the policy document'),
  }),
  // Jobs
  r('post', '/v1/jobs', 'Beta', 'v1.3', 'key', 'Jobs', 'Submit an async job (execution request plus metadata)', {
    body: z.looseObject({ metadata: jobRoutes.metadataSchema.optional() }).describe('An execution request (see POST /v1/executions) with optional metadata'),
    status: 202,
  }),
  r('get', '/v1/jobs', 'Beta', undefined, 'key', 'Jobs', 'List jobs', { query: jobRoutes.listSchema }),
  r('get', '/v1/jobs/:job_id', 'Beta', 'v1.3', 'key', 'Jobs', 'A job'),
  r('post', '/v1/jobs/:job_id/cancel', 'Beta', undefined, 'key', 'Jobs', 'Cancel a job'),
  // Webhooks
  r('post', '/v1/webhooks', 'Beta', undefined, 'admin', 'Webhooks', 'Create a webhook subscription', { body: webhookRoutes.createSchema, status: 201 }),
  r('get', '/v1/webhooks', 'Beta', undefined, 'admin', 'Webhooks', 'List webhook subscriptions', { query: webhookRoutes.pageSchema }),
  r('get', '/v1/webhooks/:subscription_id', 'Beta', undefined, 'admin', 'Webhooks', 'A webhook subscription'),
  r('patch', '/v1/webhooks/:subscription_id', 'Beta', undefined, 'admin', 'Webhooks', 'Update a webhook subscription', { body: webhookRoutes.patchSchema }),
  r('delete', '/v1/webhooks/:subscription_id', 'Beta', undefined, 'admin', 'Webhooks', 'Delete a webhook subscription', { status: 204 }),
  r('get', '/v1/webhooks/:subscription_id/deliveries', 'Beta', undefined, 'admin', 'Webhooks', 'Deliveries of a subscription', { query: webhookRoutes.pageSchema }),
  r('post', '/v1/webhooks/:subscription_id/test', 'Beta', undefined, 'admin', 'Webhooks', 'Send a test event (200 delivered, 202 queued)'),
  // Governance events and integrity
  r('get', '/v1/governance/events', 'GA', 'v1.0', 'key', 'Governance events', 'List governance events', { query: eventRoutes.listSchema }),
  r('get', '/v1/governance/events/stream', 'Beta', 'v1.3', 'key', 'Governance events', 'Governance events as Server-Sent Events', {
    query: eventRoutes.streamSchema,
    contentType: 'text/event-stream',
  }),
  r('get', '/v1/governance/events/:event_id', 'GA', 'v1.0', 'key', 'Governance events', 'A governance event'),
  r('get', '/v1/integrity/permit-binding-public-keys', 'Beta', undefined, 'public', 'Integrity', 'Ed25519 keys of permit-binding signatures'),
  r('get', '/v1/integrity/checkpoint-public-key', 'Beta', undefined, 'public', 'Integrity', 'Key of signed checkpoints'),
  r('get', '/v1/integrity/checkpoints/latest', 'Beta', undefined, 'key', 'Integrity', 'Latest signed checkpoint'),
  r('get', '/v1/integrity/checkpoints/:tree_size', 'Beta', undefined, 'key', 'Integrity', 'Signed checkpoint at a tree size'),
  r('get', '/v1/integrity/proofs/inclusion', 'Beta', undefined, 'key', 'Integrity', 'Inclusion proof', { query: integrityRoutes.inclusionSchema }),
  r('get', '/v1/integrity/proofs/consistency', 'Beta', undefined, 'key', 'Integrity', 'Consistency proof', { query: integrityRoutes.consistencySchema }),
  // Compliance exports
  r('post', '/v1/compliance/exports', 'GA', 'v1.1', 'admin', 'Compliance', 'Start a compliance export', { body: complianceRoutes.createSchema, status: 202 }),
  r('get', '/v1/compliance/exports', 'GA', 'v1.1', 'admin', 'Compliance', 'List compliance exports', { query: complianceRoutes.listSchema }),
  r('get', '/v1/compliance/exports/:export_id', 'GA', 'v1.1', 'admin', 'Compliance', 'A compliance export'),
  r('get', '/v1/compliance/exports/:export_id/download', 'Beta', undefined, 'admin', 'Compliance', 'Download an export bundle', { contentType: 'application/gzip' }),
  r('get', '/v1/compliance/keys', 'Beta', undefined, 'public', 'Compliance', 'Keys that sign export bundles'),
  // Management API (excluded from tiers)
  r('get', '/v1/projects/:project_id', 'Management', undefined, 'key', 'Projects', 'The project'),
  r('get', '/v1/projects/:project_id/api-keys', 'Management', undefined, 'admin', 'Projects', 'List API keys'),
  r('post', '/v1/projects/:project_id/api-keys', 'Management', undefined, 'admin', 'Projects', 'Create an API key', { body: projectRoutes.createKeySchema, status: 201 }),
  r('post', '/v1/projects/:project_id/api-keys/:key_id/revoke', 'Management', undefined, 'admin', 'Projects', 'Revoke an API key'),
  // Proxies: pass-through, provider-native bodies and errors
  ...PROXY_PROVIDERS.flatMap((p) => [
    r('post', `/v1/proxy/${p}/:native_path`, PROXY_TIERS[p].stability, PROXY_TIERS[p].since, 'key', 'Proxies', `Governed pass-through to ${p} (provider-native request and response)`),
    r('get', `/v1/proxy/${p}/:native_path`, 'Beta', undefined, 'key', 'Proxies', `Pass-through read routes of ${p} (for example models)`),
    r('delete', `/v1/proxy/${p}/:native_path`, 'Beta', undefined, 'key', 'Proxies', `Pass-through delete routes of ${p}`),
  ]),
];

/**
 * Registered routes deliberately left out of the document: `METHOD path` as Koa registers it.
 * Nothing under /v1 today; /metrics (Prometheus text, outside /v1) and /docs are not API routes.
 */
export const OPENAPI_EXCLUDED: string[] = [];

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ example: 'validation_error' }),
      message: z.string(),
      details: z.record(z.string(), z.unknown()),
    }),
  })
  .meta({ id: 'Error', description: 'Request-level failure: transport, validation, auth, not-found, conflict (spec, "Error contract")' });

const ERROR_STATUSES: Record<number, string> = {
  400: 'Invalid body, headers or field combination',
  401: 'Missing or invalid credentials',
  403: 'Hard deny, scope or configuration',
  404: 'Resource absent for this project',
  409: 'Conflict with an existing resource or replay contract',
  429: 'Throttled; Retry-After in seconds',
  500: 'Internal failure',
};

export function openApiPath(koaPath: string): string {
  return koaPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function pathParams(koaPath: string): z.ZodObject | undefined {
  const names = [...koaPath.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
  if (!names.length) return undefined;
  return z.object(
    Object.fromEntries(
      names.map((n) => [n, n === 'native_path' ? z.string().describe("The provider's native path, for example chat/completions (may contain /)") : z.string()]),
    ),
  );
}

let cached: unknown;

export function buildOpenApiDocument(version = process.env.npm_package_version ?? '0.1.0'): Record<string, unknown> {
  if (cached) return cached as Record<string, unknown>;
  const registry = new OpenAPIRegistry();
  const bearer = registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'A project API key (tg_client_… or tg_admin_…); admin-scope routes need an admin key',
  });
  const error = errorSchema; // a component through its .meta({ id })
  for (const route of OPENAPI_ROUTES) {
    const status = route.status ?? 200;
    const responses: Record<string, { description: string; content?: Record<string, { schema: z.ZodType }> }> = {
      [String(status)]:
        status === 204
          ? { description: 'No content' }
          : { description: 'Success', content: { [route.contentType ?? 'application/json']: { schema: z.unknown() } } },
    };
    for (const [code, description] of Object.entries(ERROR_STATUSES)) {
      if (route.auth === 'public' && (code === '401' || code === '403')) continue;
      responses[code] = { description, content: { 'application/json': { schema: error } } };
    }
    const params = pathParams(route.path);
    registry.registerPath({
      method: route.method,
      path: openApiPath(route.path),
      summary: route.summary,
      tags: [route.tag],
      security: route.auth === 'public' ? [] : [{ [bearer.name]: [] }],
      request: {
        ...(params ? { params } : {}),
        ...(route.query ? { query: route.query as z.ZodObject } : {}),
        ...(route.body ? { body: { required: true, content: { 'application/json': { schema: route.body } } } } : {}),
      },
      responses,
      'x-stability': route.stability,
      ...(route.since ? { 'x-since': route.since } : {}),
      ...(route.auth === 'admin' ? { 'x-scope': 'admin' } : {}),
    });
  }
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Tollgate API',
      version,
      description:
        'Governed execution for LLM providers. `x-stability` is the route tier (GA, Beta, Deprecated; Management routes are excluded from tiers), `x-since` the release label from the spec where it assigns one.',
    },
    servers: [{ url: '/' }],
  });
  cached = doc;
  return doc as unknown as Record<string, unknown>;
}

const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tollgate API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>`;

// A separate file, not inline, so a strict Content-Security-Policy (script-src 'self') holds.
const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#reference', deepLinking: true, tryItOutEnabled: false });`;

/** GET /v1/openapi.json, GET /docs and its assets: public, no key. */
export function registerOpenApiRoutes(router: Router): void {
  router.get('/v1/openapi.json', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = buildOpenApiDocument();
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
    ctx.body = DOCS_HTML;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = DOCS_INIT;
  });
  router.get('/docs/assets/:file', (ctx) => {
    const type = ASSETS[ctx.params.file];
    if (!type) return; // 404 through the router's fallthrough
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(SWAGGER_DIR, ctx.params.file));
  });
}
