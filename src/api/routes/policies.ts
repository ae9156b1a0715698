import Router from '@koa/router';
import { ApiDeps } from '../deps';
import { errors, parseOrThrow } from '../errors';
import { authenticate, authOf } from '../middleware/auth';
import { createPolicySchema, createPolicyService, updatePolicySchema } from '../../policies/service';
import { findTemplate, POLICY_TEMPLATES, templateView } from '../../policies/templates';

/**
 * Addressable policies of the key's project (reads: any key; writes: admin) and policy presets.
 * Design: src/policies/service.ts and docs/decisions.md "Permits and policies".
 */
export function registerPoliciesRoutes(router: Router, deps: ApiDeps): void {
  const anyKey = authenticate(deps.keys);
  const adminKey = authenticate(deps.keys, { scope: 'admin' });
  const svc = createPolicyService({ db: deps.db, clock: deps.clock });

  router.get('/v1/policies', anyKey, async (ctx) => {
    ctx.body = await svc.list(authOf(ctx).projectId);
  });

  router.post('/v1/policies', adminKey, async (ctx) => {
    ctx.status = 201;
    ctx.body = await svc.create(authOf(ctx), parseOrThrow(createPolicySchema, ctx.request.body ?? {}));
  });

  router.get('/v1/policies/:policy_id', anyKey, async (ctx) => {
    ctx.body = await svc.get(authOf(ctx).projectId, ctx.params.policy_id);
  });

  router.patch('/v1/policies/:policy_id', adminKey, async (ctx) => {
    ctx.body = await svc.update(authOf(ctx), ctx.params.policy_id, parseOrThrow(updatePolicySchema, ctx.request.body ?? {}));
  });

  router.delete('/v1/policies/:policy_id', adminKey, async (ctx) => {
    ctx.body = await svc.remove(authOf(ctx), ctx.params.policy_id);
  });

  router.get('/v1/policy-templates', anyKey, async (ctx) => {
    ctx.body = { object: 'list', data: POLICY_TEMPLATES.map(templateView) };
  });

  router.get('/v1/policy-templates/:template_id', anyKey, async (ctx) => {
    const t = findTemplate(ctx.params.template_id);
    if (!t) throw errors.notFound('Policy template', ctx.params.template_id);
    ctx.body = templateView(t);
  });
}
