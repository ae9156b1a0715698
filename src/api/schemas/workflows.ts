import { z } from 'zod';

/** Responses of the intent routes (spec, "Workflow declaration" and the /v1/workflows endpoints). */

const projectedCost = z
  .looseObject({
    amount_micros: z.number().int(),
    currency: z.string(),
    methodology: z.looseObject({ basis: z.string(), provenance: z.string() }),
  })
  .meta({ id: 'ProjectedCost' });

const status = z.enum(['active', 'completed', 'expired', 'rejected']);

/** A workflow's state and counters, as one workflow and the list show them. */
const workflowHead = {
  workflow_id: z.string(),
  status,
  version: z.number().int(),
  actual_calls: z.number().int(),
  expected_calls: z.number().int().nullable(),
  max_calls: z.number().int().nullable(),
};

export const workflowDeclarationSchema = z
  .union([
    z.looseObject({
      workflow_id: z.string(),
      decision: z.literal('accepted'),
      status,
      version: z.number().int(),
      actual_calls: z.number().int(),
      projected_cost: projectedCost,
      declared_by: z.looseObject({ type: z.string(), id: z.string() }),
      declared_via: z.looseObject({ sdk: z.string().nullable(), sdk_version: z.string().nullable() }),
      declaration_signature_b64: z.string(),
      declared_at: z.string(),
      expires_at: z.string().nullable(),
    }),
    z.looseObject({
      workflow_id: z.string(),
      decision: z.literal('rejected'),
      reason_code: z.string(),
      projected_cost: projectedCost,
      decision_details: z.looseObject({
        current_monthly_spend_usd_micros: z.number().int(),
        monthly_cap_usd_micros: z.number().int().nullable(),
        projected_workflow_cost_usd_micros: z.number().int(),
      }),
    }),
  ])
  .meta({ id: 'WorkflowDeclaration' });

const amendment = z
  .looseObject({
    id: z.string(),
    applied_against_version: z.number().int(),
    new_expected_calls: z.number().int().nullable(),
    new_max_calls: z.number().int().nullable(),
    reason_provided: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'WorkflowAmendment' });

export const workflowSchema = z
  .looseObject({
    ...workflowHead,
    drift: z.looseObject({ expected_calls_exceeded: z.boolean(), max_calls_exceeded: z.boolean() }),
    // A rejected declaration is stored unsigned.
    declaration: z.looseObject({ declared_at: z.string(), declaration_signature_b64: z.string().nullable(), canonical_intent_hash: z.string() }),
    amendments: z.array(amendment),
  })
  .meta({ id: 'Workflow' });

export const workflowListSchema = z
  .looseObject({
    data: z.array(
      z.looseObject({
        ...workflowHead,
        projected_cost_usd_micros: z.number().int().meta({ description: 'The projected cost stored with the intent (its projected_cost.amount_micros)' }),
        actual_cost_usd_micros: z.number().int().meta({ description: 'The cost of the calls recorded under the intent so far' }),
        declared_at: z.string(),
        expires_at: z.string().nullable(),
      }),
    ),
    next_cursor: z.string().nullable(),
  })
  .meta({ id: 'WorkflowList' });

export const workflowAmendResultSchema = z
  .looseObject({ workflow_id: z.string(), status, version: z.number().int(), amendment, projected_cost: projectedCost })
  .meta({ id: 'WorkflowAmendResult' });

export const workflowCompleteResultSchema = z
  .looseObject({
    workflow_id: z.string(),
    status: z.literal('completed'),
    version: z.number().int(),
    actual_calls: z.number().int(),
    expected_calls: z.number().int().nullable(),
    max_calls: z.number().int().nullable(),
    completed_at: z.string(),
    reconciliation: z.looseObject({
      authoritative_actual_calls: z.number().int(),
      cached_actual_calls: z.number().int(),
      counter_divergence_detected: z.boolean(),
    }),
  })
  .meta({ id: 'WorkflowCompleteResult' });
