import { errors } from '../errors';
import { authOf } from '../middleware/auth';
import { projectRead, projectWrite, routeFamily } from '../route-table';
import { deletedPolicySchema, policyListSchema, policySchema, policyTemplateListSchema, policyTemplateSchema } from '../schemas/policies';
import { createPolicySchema, createPolicyService, updatePolicySchema } from '../../policies/service';
import { findTemplate, POLICY_TEMPLATES, templateView } from '../../policies/templates';

/**
 * Addressable policies of the key's project (reads: any key; writes: admin) and policy presets.
 * Design: src/policies/service.ts and docs/decisions/policies-api.md.
 */
export const policiesRoutes = routeFamily(
  'Policies',
  (deps) => {
    const svc = createPolicyService({ db: deps.db, clock: deps.clock });
    return { svc };
  },
  [
    {
      method: 'get',
      path: '/v1/policies',
      stability: 'GA',
      since: 'v1.1',
      auth: 'key',
      summary: 'List policies',
      response: policyListSchema,
      handler: projectRead(({ svc }, projectId) => svc.list(projectId)),
    },
    {
      method: 'post',
      path: '/v1/policies',
      stability: 'GA',
      since: 'v1.1',
      auth: 'admin',
      summary: 'Create a policy',
      response: policySchema,
      body: createPolicySchema,
      status: 201,
      handler: projectWrite(createPolicySchema, ({ svc }, auth, input) => svc.create(auth, input)),
    },
    {
      method: 'get',
      path: '/v1/policies/:policy_id',
      stability: 'Beta',
      auth: 'key',
      summary: 'A policy',
      response: policySchema,
      handler: projectRead(({ svc }, projectId, { policy_id }) => svc.get(projectId, policy_id)),
    },
    {
      method: 'patch',
      path: '/v1/policies/:policy_id',
      stability: 'GA',
      since: 'v1.1',
      auth: 'admin',
      summary: 'Update a policy',
      response: policySchema,
      body: updatePolicySchema,
      handler: projectWrite(updatePolicySchema, ({ svc }, auth, input, { policy_id }) => svc.update(auth, policy_id, input)),
    },
    {
      method: 'delete',
      path: '/v1/policies/:policy_id',
      stability: 'GA',
      since: 'v1.1',
      auth: 'admin',
      summary: 'Delete a policy',
      response: deletedPolicySchema,
      handler: async (ctx, { svc }) => {
        ctx.body = await svc.remove(authOf(ctx), ctx.params.policy_id);
      },
    },
    {
      method: 'get',
      path: '/v1/policy-templates',
      stability: 'Beta',
      since: 'v1.4',
      auth: 'key',
      members: true,
      summary: 'List policy templates',
      response: policyTemplateListSchema,
      handler: async (ctx) => {
        ctx.body = { object: 'list', data: POLICY_TEMPLATES.map(templateView) };
      },
    },
    {
      method: 'get',
      path: '/v1/policy-templates/:template_id',
      stability: 'Beta',
      since: 'v1.4',
      auth: 'key',
      members: true,
      summary: 'A policy template',
      response: policyTemplateSchema,
      handler: async (ctx) => {
        const t = findTemplate(ctx.params.template_id);
        if (!t) throw errors.notFound('Policy template', ctx.params.template_id);
        ctx.body = templateView(t);
      },
    },
  ],
);
