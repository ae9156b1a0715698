import { z } from 'zod';
import { ApiError, errors, parseOrThrow } from '../errors';
import { authOf, keyAuthOf, AuthContext } from '../middleware/auth';
import { temporalServiceDeps } from '../deps';
import { workflowAmendResultSchema, workflowCompleteResultSchema, workflowDeclarationSchema, workflowListSchema, workflowSchema } from '../schemas/workflows';
import { permitBindingKeyListSchema } from '../schemas/integrity';
import { routeFamily } from '../route-table';
import { cursorPage, decodeCursor, encodeCursor } from '../cursor';
import { INTENT_STATUSES, listIntents } from '../../db/repositories/intents';
import {
  amendIntent,
  completeIntent,
  declareIntent,
  IntentServiceDeps,
  readIntent,
} from '../../intents/service';
import { integritySigner } from '../../intents/signing';

export { WORKFLOW_ID_PATTERN } from '../../executions/schema';
import { WORKFLOW_ID_PATTERN } from '../../executions/schema';

export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 200;

const count = z.number().int().min(1).max(1_000_000_000);

const intentSchema = z
  .object({
    expected_calls: count.optional(),
    max_calls: count.optional(),
    expected_model: z.string().min(1).max(200).optional(),
    expected_input_tokens_per_call: z.number().int().min(0).max(10_000_000).optional(),
    expected_output_tokens_per_call: z.number().int().min(0).max(10_000_000).optional(),
    max_duration_seconds: z.number().int().min(1).max(366 * 24 * 3600).optional(),
  })
  .strict()
  .refine((i) => i.expected_calls !== undefined || i.max_calls !== undefined, {
    message: 'At least one of expected_calls or max_calls is required',
  });

export const declareSchema = z
  .object({
    workflow_id: z.string().regex(WORKFLOW_ID_PATTERN, 'workflow_id must be 1 to 255 characters of [A-Za-z0-9_-]'),
    intent: intentSchema,
    budget_envelope_id: z.string().min(1).max(255).nullable().optional(),
  })
  .strict();

export const amendSchema = z
  .object({
    if_match_version: z.number().int().min(1),
    new_expected_calls: count.optional(),
    new_max_calls: count.optional(),
    reason_provided: z.string().max(2000).optional(),
  })
  .strict()
  .refine((b) => b.new_expected_calls !== undefined || b.new_max_calls !== undefined, {
    message: 'At least one of new_expected_calls or new_max_calls is required',
  });

export const completeSchema = z.object({ reason_provided: z.string().max(2000).optional() }).strict();

export const listSchema = z
  .object({
    status: z.enum(INTENT_STATUSES as [string, ...string[]]).optional(),
    created_at_gte: z.iso.datetime({ offset: true }).optional(),
    created_at_lte: z.iso.datetime({ offset: true }).optional(),
    limit: z.coerce.number().int().min(1).max(LIST_LIMIT_MAX).default(LIST_LIMIT_DEFAULT),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

/** Opaque cursor (src/api/cursor.ts): `{"v":1,"t":<declared_at, microseconds>,"id":<row id>}`. */
export function encodeIntentCursor(t: string, id: string): string {
  return encodeCursor({ t, id });
}

function decodeIntentCursor(cursor: string): { declaredAt: string; id: string } {
  const c = decodeCursor(cursor, ['t', 'id'], (c) => !Number.isNaN(Date.parse(c.t)));
  return { declaredAt: c.t, id: c.id };
}

/** Intents require the Production or Enterprise plan (403 plan.upgrade_required). */
function requireIntentPlan(auth: AuthContext): void {
  if (auth.plan === 'starter') {
    throw new ApiError(403, 'plan.upgrade_required', 'Intents require the Production or Enterprise plan', {
      details: { current_plan: auth.plan, required_plans: ['production', 'enterprise'] },
    });
  }
}

function workflowIdParam(raw: string): string {
  if (!WORKFLOW_ID_PATTERN.test(raw)) throw errors.notFound('Workflow', raw);
  return raw;
}

function header(ctx: { get(name: string): string }, name: string): string | null {
  const v = ctx.get(name);
  return v ? v.slice(0, 200) : null;
}

export const workflowRoutes = routeFamily(
  'Intents',
  (deps) => ({ svc: temporalServiceDeps(deps) satisfies IntentServiceDeps }),
  [
    {
      method: 'post',
      path: '/v1/workflows',
      stability: 'Beta',
      auth: 'key',
      summary: 'Declare an intent (201, or 200 on an idempotent repeat)',
      body: declareSchema,
      status: 201,
      alsoStatus: [200],
      response: workflowDeclarationSchema,
      handler: async (ctx, { svc }) => {
        const auth = keyAuthOf(ctx);
        requireIntentPlan(auth);
        const body = parseOrThrow(declareSchema, ctx.request.body ?? {});
        const result = await declareIntent(svc, { projectId: auth.projectId, keyId: auth.keyId }, body, {
          declaredVia: { sdk: header(ctx, 'x-svc-sdk'), sdk_version: header(ctx, 'x-svc-sdk-version') },
        });
        ctx.status = result.status;
        ctx.body = result.body;
      },
    },
    {
      method: 'get',
      path: '/v1/workflows',
      stability: 'Beta',
      auth: 'key',
      members: true,
      summary: 'List intents',
      query: listSchema,
      response: workflowListSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        requireIntentPlan(auth);
        const q = parseOrThrow(listSchema, ctx.query);
        const after = q.cursor ? decodeIntentCursor(q.cursor) : undefined;
        const rows = await listIntents(deps.db, auth.projectId, {
          status: q.status as never,
          createdAtGte: q.created_at_gte ? new Date(q.created_at_gte) : undefined,
          createdAtLte: q.created_at_lte ? new Date(q.created_at_lte) : undefined,
          limit: q.limit + 1,
          after,
        });
        ctx.body = cursorPage(
          rows,
          q.limit,
          (r) => ({
            workflow_id: r.workflow_id,
            status: r.status,
            version: r.version,
            actual_calls: r.actual_calls,
            expected_calls: r.expected_calls,
            max_calls: r.max_calls,
            projected_cost_usd_micros: Number((r.projected_cost as { amount_micros?: number }).amount_micros ?? 0),
            actual_cost_usd_micros: Number(r.actual_cost_usd_micros),
            declared_at: r.declared_at.toISOString(),
            expires_at: r.expires_at ? r.expires_at.toISOString() : null,
          }),
          (last) => encodeIntentCursor(last.cursor_ts, last.id),
        );
      },
    },
    {
      method: 'get',
      path: '/v1/workflows/:workflow_id',
      stability: 'Beta',
      auth: 'key',
      members: true,
      summary: 'An intent',
      response: workflowSchema,
      handler: async (ctx, { svc }) => {
        const auth = authOf(ctx);
        requireIntentPlan(auth);
        ctx.body = await readIntent(svc, auth.projectId, workflowIdParam(ctx.params.workflow_id));
      },
    },
    {
      method: 'post',
      path: '/v1/workflows/:workflow_id/amend',
      stability: 'Beta',
      auth: 'key',
      summary: 'Amend an intent (optimistic version)',
      body: amendSchema,
      response: workflowAmendResultSchema,
      handler: async (ctx, { svc }) => {
        const auth = authOf(ctx);
        requireIntentPlan(auth);
        const workflowId = workflowIdParam(ctx.params.workflow_id);
        const body = parseOrThrow(amendSchema, ctx.request.body ?? {});
        ctx.body = await amendIntent(svc, auth.projectId, workflowId, body);
      },
    },
    {
      method: 'post',
      path: '/v1/workflows/:workflow_id/complete',
      stability: 'Beta',
      auth: 'key',
      summary: 'Complete an intent',
      body: completeSchema,
      response: workflowCompleteResultSchema,
      handler: async (ctx, { svc }) => {
        const auth = authOf(ctx);
        requireIntentPlan(auth);
        const workflowId = workflowIdParam(ctx.params.workflow_id);
        const body = parseOrThrow(completeSchema, ctx.request.body ?? {});
        ctx.body = await completeIntent(svc, auth.projectId, workflowId, body);
      },
    },
    // Public verification key for declaration and amendment signatures (no authentication).
    {
      method: 'get',
      path: '/v1/integrity/permit-binding-public-keys',
      stability: 'Beta',
      auth: 'public',
      summary: 'Ed25519 keys of permit-binding signatures',
      response: permitBindingKeyListSchema,
      handler: async (ctx, { deps }) => {
        const signer = await integritySigner(deps.db, deps.config);
        ctx.set('cache-control', 'public, max-age=300');
        ctx.body = {
          object: 'list',
          data: [
            {
              kid: signer.kid,
              algorithm: 'Ed25519',
              public_key_b64: signer.publicKeyB64,
              public_key_pem: signer.publicKeyPem,
              source: signer.source,
              signs: ['workflow_declaration', 'workflow_amendment'],
              canonicalization: 'RFC 8785 (JCS)',
              created_at: signer.createdAt,
            },
          ],
        };
      },
    },
  ],
);
