import Router from '@koa/router';
import { ApiDeps } from '../deps';
import { errors, zodIssues } from '../errors';
import { authenticate, authOf } from '../middleware/auth';
import { getPolicy, PolicyValidationError, StoredPolicy, updatePolicy } from '../../db/repositories/policies';

/**
 * Management of the project's governance policy (admin key until a dashboard exists):
 * GET returns the current document with its version; PATCH applies an RFC 7396 JSON merge patch,
 * validates the result, stores version + 1 and appends a `policy.updated` event.
 */
export function policyView(p: StoredPolicy) {
  return {
    object: 'project_policy',
    project_id: p.project_id,
    version: p.version,
    updated_at: p.updated_at ? new Date(p.updated_at).toISOString() : null,
    updated_by: p.updated_by,
    document: p.document,
  };
}

export function registerPolicyRoutes(router: Router, deps: ApiDeps): void {
  const adminKey = authenticate(deps.keys, { scope: 'admin' });

  router.get('/v1/projects/:project_id/policy', adminKey, async (ctx) => {
    const auth = authOf(ctx);
    if (ctx.params.project_id !== auth.projectId) throw errors.notFound('Project', ctx.params.project_id);
    ctx.body = policyView(await getPolicy(deps.db, auth.projectId));
  });

  router.patch('/v1/projects/:project_id/policy', adminKey, async (ctx) => {
    const auth = authOf(ctx);
    if (ctx.params.project_id !== auth.projectId) throw errors.notFound('Project', ctx.params.project_id);
    const patch = ctx.request.body;
    if (patch === undefined || patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
      throw errors.validation([{ path: '', message: 'the body must be a JSON object (a JSON merge patch of the policy document)', code: 'invalid_type' }]);
    }
    try {
      const stored = await updatePolicy(deps.db, {
        projectId: auth.projectId,
        patch,
        mode: 'merge',
        updatedBy: `api_key:${auth.keyId}`,
        now: deps.clock.now(),
      });
      ctx.body = policyView(stored);
    } catch (err) {
      if (err instanceof PolicyValidationError) throw errors.validation(zodIssues(err.zodError));
      throw err;
    }
  });
}
