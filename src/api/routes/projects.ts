import Router from '@koa/router';
import { z } from 'zod';
import { ApiDeps } from '../deps';
import { ApiError, errors, parseOrThrow } from '../errors';
import { authenticate, authOf } from '../middleware/auth';
import { findProject } from '../../db/repositories/projects';
import { createApiKey, listApiKeys, revokeApiKey, ApiKeyRecord } from '../../db/repositories/api-keys';

export const createKeySchema = z
  .object({
    scope: z.enum(['client', 'admin']),
    name: z.string().min(1).max(200).optional(),
  })
  .strict();

function keyView(k: ApiKeyRecord) {
  return {
    id: k.id,
    object: 'api_key',
    project_id: k.project_id,
    name: k.name,
    scope: k.scope,
    key_prefix: k.key_prefix,
    created_at: k.created_at.toISOString(),
    revoked_at: k.revoked_at ? k.revoked_at.toISOString() : null,
  };
}

/** A key only ever reaches its own project; another project's id is a 404, not a 403. */
function ownProject(ctx: { params: Record<string, string> }, projectId: string): void {
  if (ctx.params.project_id !== projectId) throw errors.notFound('Project', ctx.params.project_id);
}

export function registerProjectRoutes(router: Router, deps: ApiDeps): void {
  const anyKey = authenticate(deps.keys);
  const adminKey = authenticate(deps.keys, { scope: 'admin' });

  router.get('/v1/projects/:project_id', anyKey, async (ctx) => {
    const auth = authOf(ctx);
    ownProject(ctx, auth.projectId);
    const project = await findProject(deps.db, auth.projectId);
    if (!project) throw errors.notFound('Project', auth.projectId);
    ctx.body = { id: project.id, object: 'project', name: project.name, plan: project.plan, created_at: project.created_at.toISOString() };
  });

  router.get('/v1/projects/:project_id/api-keys', adminKey, async (ctx) => {
    const auth = authOf(ctx);
    ownProject(ctx, auth.projectId);
    ctx.body = { object: 'list', data: (await listApiKeys(deps.db, auth.projectId)).map(keyView) };
  });

  router.post('/v1/projects/:project_id/api-keys', adminKey, async (ctx) => {
    const auth = authOf(ctx);
    ownProject(ctx, auth.projectId);
    const body = parseOrThrow(createKeySchema, ctx.request.body ?? {});
    const { record, key } = await createApiKey(deps.db, { projectId: auth.projectId, scope: body.scope, name: body.name });
    ctx.status = 201;
    // The only time the key itself is returned.
    ctx.body = { ...keyView(record), key };
  });

  router.post('/v1/projects/:project_id/api-keys/:key_id/revoke', adminKey, async (ctx) => {
    const auth = authOf(ctx);
    ownProject(ctx, auth.projectId);
    const keys = await listApiKeys(deps.db, auth.projectId);
    if (!keys.some((k) => k.id === ctx.params.key_id)) throw errors.notFound('API key', ctx.params.key_id);
    if (ctx.params.key_id === auth.keyId) {
      throw new ApiError(409, 'cannot_revoke_own_key', 'An API key cannot revoke itself; use another admin key');
    }
    const record = await revokeApiKey(deps.db, ctx.params.key_id);
    // Other processes drop the key on the database's change notice; this one at once.
    deps.keys.invalidate(auth.projectId);
    ctx.body = keyView(record!);
  });
}
