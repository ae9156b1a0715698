import { z } from 'zod';
import { errors, parseOrThrow, zodIssues } from '../errors';
import { actorOf, managementAuthorizer, principalOf, projectOf } from '../middleware/user-auth';
import { routeFamily } from '../route-table';
import { projectPolicySchema, projectPolicyVersionListSchema } from '../schemas/policies';
import { getPolicy, listPolicyVersions, PolicyValidationError, StoredPolicy, updatePolicy } from '../../db/repositories/policies';

/**
 * Management of the project's governance policy (a member's user JWT — viewer reads, admin
 * changes — or the project's admin API key):
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

const versionsQuery = z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) });

export const projectPolicyRoutes = routeFamily(
  'Policies',
  (deps) => ({ viewer: managementAuthorizer(deps, { role: 'viewer' }), admin: managementAuthorizer(deps, { role: 'admin' }) }),
  [
    {
      method: 'get',
      path: '/v1/projects/:project_id/policy',
      stability: 'Management',
      tag: 'Projects',
      auth: 'native',
      summary: "The project's policy document",
      response: projectPolicySchema,
      handler: async (ctx, { deps, viewer }) => {
        await viewer(ctx);
        ctx.body = policyView(await getPolicy(deps.db, projectOf(ctx).projectId));
      },
    },
    {
      method: 'get',
      path: '/v1/projects/:project_id/policy/versions',
      stability: 'Management',
      tag: 'Projects',
      auth: 'native',
      summary: "The project's stored policy versions, newest first (at most `limit`, default 50)",
      query: versionsQuery,
      response: projectPolicyVersionListSchema,
      handler: async (ctx, { deps, viewer }) => {
        await viewer(ctx);
        const q = parseOrThrow(versionsQuery, ctx.query, 'query');
        ctx.body = { object: 'list', data: (await listPolicyVersions(deps.db, projectOf(ctx).projectId, q.limit)).map(policyView) };
      },
    },
    {
      method: 'patch',
      path: '/v1/projects/:project_id/policy',
      stability: 'GA',
      since: 'v1.1',
      auth: 'native',
      summary: "Merge-patch the project's policy document",
      response: projectPolicySchema,
      body: z.record(z.string(), z.unknown()).describe('JSON merge patch of the policy document'),
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const projectId = projectOf(ctx).projectId;
        const patch = ctx.request.body;
        if (patch === undefined || patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
          throw errors.validation([{ path: '', message: 'the body must be a JSON object (a JSON merge patch of the policy document)', code: 'invalid_type' }]);
        }
        try {
          const stored = await updatePolicy(deps.db, {
            projectId,
            patch,
            mode: 'merge',
            updatedBy: actorOf(principalOf(ctx)),
            now: deps.clock.now(),
          });
          ctx.body = policyView(stored);
        } catch (err) {
          if (err instanceof PolicyValidationError) throw errors.validation(zodIssues(err.zodError));
          throw err;
        }
      },
    },
  ],
);
