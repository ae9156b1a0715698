import { z } from 'zod';
import { ApiError, errors, parseOrThrow } from '../errors';
import { decodeCursor, pageSchema } from '../cursor';
import { apiKeyListSchema, apiKeySchema, createdApiKeySchema, projectListSchema, projectSchema } from '../schemas/management';
import { routeFamily } from '../route-table';
import { actorOf, hasRole, managementAuthorizer, principalOf, projectOf } from '../middleware/user-auth';
import { withTransaction } from '../../db/pool';
import { createProject, findProject, PLANS, renameProject, setProjectPlan, setProjectRetention } from '../../db/repositories/projects';
import { createApiKey, listApiKeys, pageApiKeys, revokeApiKey } from '../../db/repositories/api-keys';
import { listUserProjects, upsertMember } from '../../db/repositories/users';
import { apiKeyView, listPage, projectView } from '../../management/views';

export const createKeySchema = z
  .object({
    scope: z.enum(['client', 'admin']),
    name: z.string().min(1).max(200).optional(),
    /** ISO 8601 instant in the future; absent: the key does not expire. */
    expires_at: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();


export const createProjectSchema = z.object({ name: z.string().trim().min(1).max(200) }).strict();

export const updateProjectSchema = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    plan: z.enum(PLANS as [string, ...string[]]).optional(),
    /** Days the project's records are kept before they are archived and deleted; null: the gateway's RETENTION_DAYS. */
    retention_days: z.number().int().min(1).max(36500).nullable().optional(),
  })
  .strict()
  .refine((b) => b.name !== undefined || b.plan !== undefined || b.retention_days !== undefined, { message: 'give name, plan or retention_days' });

export const cursorAfter = (cursor: string | undefined) => {
  if (!cursor) return undefined;
  const c = decodeCursor(cursor, ['at', 'id'], (v) => !Number.isNaN(Date.parse(v.at)));
  return { createdAt: c.at, id: c.id };
};

/**
 * Projects and their API keys (management API). User access tokens act with their role in the
 * project; admin API keys (the routes' original credential) act as `admin` of their own project,
 * and a client key may read its project. Another project's id answers 404. Authentication runs in
 * the handler (`auth: 'native'`): the table's key guards know no user tokens (src/api/middleware/user-auth.ts).
 */
export const projectRoutes = routeFamily(
  'Projects',
  (deps) => ({
    viewer: managementAuthorizer(deps, { role: 'viewer', apiKeys: 'any' }),
    admin: managementAuthorizer(deps, { role: 'admin' }),
    userOnly: managementAuthorizer(deps, { apiKeys: 'none' }),
    anyCaller: managementAuthorizer(deps, { apiKeys: 'any' }),
  }),
  [
    {
      method: 'get',
      path: '/v1/projects',
      stability: 'Management',
      auth: 'native',
      summary: "The caller's projects (user token: every membership with its role; API key: its project)",
      response: projectListSchema,
      query: pageSchema,
      handler: async (ctx, { deps, anyCaller }) => {
        await anyCaller(ctx);
        const q = parseOrThrow(pageSchema, ctx.query, 'query');
        const p = principalOf(ctx);
        if (p.kind === 'api_key') {
          const project = await findProject(deps.db, p.projectId);
          ctx.body = { object: 'list', data: project ? [projectView(project, p.role)] : [], next_cursor: null };
          return;
        }
        const rows = await listUserProjects(deps.db, { userId: p.userId, limit: q.limit + 1, after: cursorAfter(q.cursor) });
        ctx.body = listPage(rows, q.limit, (r) => projectView(r, r.role));
      },
    },
    {
      method: 'post',
      path: '/v1/projects',
      stability: 'Management',
      auth: 'native',
      summary: 'Create a project (user token; the caller becomes its owner; plan starter)',
      response: projectSchema,
      body: createProjectSchema,
      status: 201,
      handler: async (ctx, { deps, userOnly }) => {
        await userOnly(ctx);
        const body = parseOrThrow(createProjectSchema, ctx.request.body ?? {});
        const p = principalOf(ctx);
        if (p.kind !== 'user') throw errors.internal();
        // New projects start on starter; paid plans come through billing or an owner's PATCH.
        const project = await withTransaction(deps.db, async (tx) => {
          const created = await createProject(tx, { name: body.name, plan: 'starter' });
          await upsertMember(tx, { projectId: created.id, userId: p.userId, role: 'owner' });
          return created;
        });
        ctx.body = projectView(project, 'owner');
      },
    },
    {
      method: 'get',
      path: '/v1/projects/:project_id',
      stability: 'Management',
      auth: 'native',
      summary: 'The project (any role; any API key of the project)',
      response: projectSchema,
      handler: async (ctx, { deps, viewer }) => {
        await viewer(ctx);
        const { projectId, role } = projectOf(ctx);
        const project = await findProject(deps.db, projectId);
        if (!project) throw errors.notFound('Project', projectId);
        ctx.body = projectView(project, role);
      },
    },
    {
      method: 'patch',
      path: '/v1/projects/:project_id',
      stability: 'Management',
      auth: 'native',
      summary: 'Rename or set the retention (admin), or change the plan (owner) of a project',
      response: projectSchema,
      body: updateProjectSchema,
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const body = parseOrThrow(updateProjectSchema, ctx.request.body ?? {});
        const { projectId, role } = projectOf(ctx);
        if (body.plan !== undefined && !(principalOf(ctx).kind === 'user' && hasRole(role, 'owner'))) {
          throw errors.forbidden('insufficient_role', 'Changing the plan requires the owner role', { required_role: 'owner', role });
        }
        let project = await findProject(deps.db, projectId);
        if (!project) throw errors.notFound('Project', projectId);
        if (body.name !== undefined) project = (await renameProject(deps.db, projectId, body.name)) ?? project;
        if (body.retention_days !== undefined) project = (await setProjectRetention(deps.db, projectId, body.retention_days)) ?? project;
        if (body.plan !== undefined && body.plan !== project.plan) {
          project = (await setProjectPlan(deps.db, projectId, body.plan as typeof project.plan)) ?? project;
          // Other processes drop cached keys on the database's change notice; this one at once.
          deps.keys.invalidate(projectId);
        }
        ctx.body = projectView(project, role);
      },
    },
    {
      method: 'get',
      path: '/v1/projects/:project_id/api-keys',
      stability: 'Management',
      auth: 'native',
      summary: 'List API keys (prefix and metadata only; admin)',
      response: apiKeyListSchema,
      query: pageSchema,
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const q = parseOrThrow(pageSchema, ctx.query, 'query');
        const { projectId } = projectOf(ctx);
        const rows = await pageApiKeys(deps.db, { projectId, limit: q.limit + 1, after: cursorAfter(q.cursor) });
        const now = deps.clock.now();
        ctx.body = listPage(rows, q.limit, (k) => apiKeyView(k, now));
      },
    },
    {
      method: 'post',
      path: '/v1/projects/:project_id/api-keys',
      stability: 'Management',
      auth: 'native',
      summary: 'Create an API key (the secret is shown once; admin)',
      response: createdApiKeySchema,
      body: createKeySchema,
      status: 201,
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const body = parseOrThrow(createKeySchema, ctx.request.body ?? {});
        const { projectId } = projectOf(ctx);
        const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
        if (expiresAt && expiresAt.getTime() <= deps.clock.now().getTime()) {
          throw errors.validation([{ path: 'expires_at', message: 'must be in the future', code: 'too_small' }]);
        }
        const { record, key } = await createApiKey(deps.db, { projectId, scope: body.scope, name: body.name, expiresAt, createdBy: actorOf(principalOf(ctx)) });
        ctx.set('Cache-Control', 'no-store');
        // The only time the key itself is returned.
        ctx.body = { ...apiKeyView(record, deps.clock.now()), key };
      },
    },
    {
      method: 'post',
      path: '/v1/projects/:project_id/api-keys/:key_id/revoke',
      stability: 'Management',
      auth: 'native',
      summary: 'Revoke an API key (admin)',
      response: apiKeySchema,
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const { projectId } = projectOf(ctx);
        const p = principalOf(ctx);
        const keys = await listApiKeys(deps.db, projectId);
        if (!keys.some((k) => k.id === ctx.params.key_id)) throw errors.notFound('API key', ctx.params.key_id);
        if (p.kind === 'api_key' && ctx.params.key_id === p.keyId) {
          throw new ApiError(409, 'cannot_revoke_own_key', 'An API key cannot revoke itself; use another admin key');
        }
        const record = await revokeApiKey(deps.db, ctx.params.key_id);
        // Other processes drop the key on the database's change notice; this one at once.
        deps.keys.invalidate(projectId);
        ctx.body = apiKeyView(record!, deps.clock.now());
      },
    },
  ],
);
