import { z } from 'zod';
import { errors, parseOrThrow } from '../errors';
import { deletedProviderKeySchema, projectProviderListSchema, projectProviderSchema, providerKeyTestSchema } from '../schemas/management';
import { routeFamily, type RouteContext } from '../route-table';
import { actorOf, managementAuthorizer, principalOf, projectOf } from '../middleware/user-auth';
import { PROVIDER_IDS, type ProviderId } from '../../config';
import { listProviders, removeProviderKey, setProviderKey, testProviderKey } from '../../management/provider-keys';

export const putProviderKeySchema = z.object({ api_key: z.string().trim().min(8).max(4096) }).strict();

function providerParam(ctx: RouteContext): ProviderId {
  const p = ctx.params.provider;
  if (!(PROVIDER_IDS as readonly string[]).includes(p)) throw errors.notFound('Provider', p);
  return p as ProviderId;
}

/**
 * A project's own provider keys (management API): which are set, store (envelope-encrypted,
 * src/crypto/envelope.ts), delete, test. Reading needs a viewer; changing and testing an admin.
 */
export const managementProviderRoutes = routeFamily(
  'Providers',
  (deps) => ({ viewer: managementAuthorizer(deps, { role: 'viewer' }), admin: managementAuthorizer(deps, { role: 'admin' }) }),
  [
    {
      method: 'get',
      path: '/v1/projects/:project_id/providers',
      stability: 'Management',
      auth: 'native',
      summary: "The five providers with the project's key status (last four characters, last test), never the key",
      response: projectProviderListSchema,
      handler: async (ctx, { deps, viewer }) => {
        await viewer(ctx);
        ctx.body = await listProviders(deps.db, deps.config, projectOf(ctx).projectId);
      },
    },
    {
      method: 'put',
      path: '/v1/projects/:project_id/providers/:provider/key',
      stability: 'Management',
      auth: 'native',
      summary: "Store the project's key for a provider (replaces one already set; admin)",
      response: projectProviderSchema,
      body: putProviderKeySchema,
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const provider = providerParam(ctx);
        const body = parseOrThrow(putProviderKeySchema, ctx.request.body ?? {});
        const { projectId } = projectOf(ctx);
        ctx.body = await setProviderKey(deps.db, deps.config, { projectId, provider, apiKey: body.api_key, actor: actorOf(principalOf(ctx)) });
        deps.projectProviderKeys.invalidate(projectId);
      },
    },
    {
      method: 'delete',
      path: '/v1/projects/:project_id/providers/:provider/key',
      stability: 'Management',
      auth: 'native',
      summary: "Delete the project's key for a provider (the deployment's key applies again; admin)",
      response: deletedProviderKeySchema,
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const provider = providerParam(ctx);
        const { projectId } = projectOf(ctx);
        const { deleted, provider: view } = await removeProviderKey(deps.db, deps.config, { projectId, provider });
        if (!deleted) throw errors.notFound('Provider key', provider);
        deps.projectProviderKeys.invalidate(projectId);
        ctx.body = { ...view, deleted: true };
      },
    },
    {
      method: 'post',
      path: '/v1/projects/:project_id/providers/:provider/test',
      stability: 'Management',
      auth: 'native',
      summary: 'A one-token call through the provider adapter with the project key (else the deployment key); the outcome is recorded (admin)',
      response: providerKeyTestSchema,
      handler: async (ctx, { deps, admin }) => {
        await admin(ctx);
        const provider = providerParam(ctx);
        ctx.body = await testProviderKey(deps.db, deps.config, deps.providers, { projectId: projectOf(ctx).projectId, provider });
      },
    },
  ],
);
