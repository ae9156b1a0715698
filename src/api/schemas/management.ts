import { z } from 'zod';

/** Management API shapes (src/management/views.ts, src/auth/service.ts, src/management/provider-keys.ts). */

const iso = z.string();

export const sessionGrantSchema = z
  .looseObject({
    object: z.literal('session'),
    token_type: z.literal('Bearer'),
    access_token: z.string(),
    expires_in: z.number().int(),
    expires_at: iso,
    refresh_token: z.string(),
    refresh_token_expires_in: z.number().int(),
    session_id: z.string(),
    user: z.looseObject({ id: z.string(), email: z.string() }),
  })
  .meta({ id: 'SessionGrant' });

export const logoutSchema = z.looseObject({ object: z.literal('logout'), revoked: z.boolean() }).meta({ id: 'Logout' });

const role = z.enum(['owner', 'admin', 'viewer']);

export const projectSchema = z
  .looseObject({ id: z.string(), object: z.literal('project'), name: z.string(), plan: z.enum(['starter', 'production', 'enterprise']), retention_days: z.number().int().nullable(), role: role.nullable(), created_at: iso })
  .meta({ id: 'Project' });

export const projectListSchema = z.looseObject({ object: z.literal('list'), data: z.array(projectSchema), next_cursor: z.string().nullable() }).meta({ id: 'ProjectList' });

export const apiKeySchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('api_key'),
    project_id: z.string(),
    name: z.string().nullable(),
    scope: z.enum(['client', 'admin']),
    key_prefix: z.string(),
    status: z.enum(['active', 'expired', 'revoked']),
    created_at: iso,
    created_by: z.string().nullable(),
    expires_at: iso.nullable(),
    revoked_at: iso.nullable(),
  })
  .meta({ id: 'ApiKey' });

/** Creation is the only answer that carries the secret. */
export const createdApiKeySchema = apiKeySchema.extend({ key: z.string() }).meta({ id: 'CreatedApiKey' });

export const apiKeyListSchema = z.looseObject({ object: z.literal('list'), data: z.array(apiKeySchema), next_cursor: z.string().nullable() }).meta({ id: 'ApiKeyList' });

export const projectProviderSchema = z
  .looseObject({
    object: z.literal('project_provider'),
    project_id: z.string(),
    provider: z.string(),
    key_source: z.enum(['project', 'deployment', 'none']),
    key: z.union([z.looseObject({ last_four: z.string(), status: z.enum(['verified', 'failing', 'untested']), kek_id: z.string(), created_at: iso, updated_at: iso }), z.null()]),
  })
  .meta({ id: 'ProjectProvider' });

export const projectProviderListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(projectProviderSchema), next_cursor: z.null() })
  .meta({ id: 'ProjectProviderList' });

export const deletedProviderKeySchema = projectProviderSchema.extend({ deleted: z.literal(true) }).meta({ id: 'DeletedProviderKey' });

export const providerKeyTestSchema = z
  .looseObject({
    object: z.literal('provider_key_test'),
    project_id: z.string(),
    provider: z.string(),
    key_source: z.enum(['project', 'deployment', 'none']),
    model: z.string(),
    outcome: z.enum(['ok', 'failed']),
    upstream_status: z.number().int().nullable(),
    error: z.string().nullable(),
    latency_ms: z.number().int(),
    tested_at: iso,
  })
  .meta({ id: 'ProviderKeyTest' });
