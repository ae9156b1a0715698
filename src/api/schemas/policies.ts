import { z } from 'zod';

/** Addressable policies (`/v1/policies`), their templates and the project's policy document. */

export const policySchema = z
  .looseObject({
    object: z.literal('policy'),
    id: z.string(),
    project_id: z.string(),
    type: z.string(),
    name: z.string().nullable(),
    description: z.string().nullable(),
    template_id: z.string().nullable(),
    config: z.unknown(),
    managed_by: z.enum(['policies', 'policy_document']),
    document_version: z.number().int(),
    created_at: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'Policy' });

export const policyListSchema = z.looseObject({ object: z.literal('list'), document_version: z.number().int(), data: z.array(policySchema) }).meta({ id: 'PolicyList' });

export const deletedPolicySchema = z
  .looseObject({ object: z.literal('policy'), id: z.string(), type: z.string(), deleted: z.literal(true), document_version: z.number().int() })
  .meta({ id: 'DeletedPolicy' });

export const policyTemplateSchema = z
  .looseObject({ object: z.literal('policy_template'), id: z.string(), name: z.string(), description: z.string(), category: z.string(), policy: z.looseObject({ type: z.string(), config: z.unknown() }) })
  .meta({ id: 'PolicyTemplate' });

export const policyTemplateListSchema = z.looseObject({ object: z.literal('list'), data: z.array(policyTemplateSchema) }).meta({ id: 'PolicyTemplateList' });

export const projectPolicySchema = z
  .looseObject({
    object: z.literal('project_policy'),
    project_id: z.string(),
    version: z.number().int(),
    updated_at: z.string().nullable(),
    updated_by: z.string().nullable(),
    document: z.looseObject({ budgets: z.looseObject({}), rate_limits: z.array(z.unknown()), firewall: z.looseObject({ mode: z.enum(['off', 'monitor', 'block']) }) }),
  })
  .meta({ id: 'ProjectPolicy' });

export const projectPolicyVersionListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(projectPolicySchema) })
  .meta({ id: 'ProjectPolicyVersionList' });
