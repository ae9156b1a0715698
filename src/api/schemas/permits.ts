import { z } from 'zod';

/** The permit object (spec, "Permits"), documented loosely: the fields every permit carries are required. */
export const permitSchema = z
  .looseObject({
    object: z.literal('permit'),
    permit_id: z.string().meta({ example: 'pmt_01j9…' }),
    id: z.string(),
    project_id: z.string(),
    decision: z.enum(['allow', 'deny', 'review', 'throttle']),
    reason_code: z.string(),
    status: z.string(),
    request_id: z.string().nullable(),
    operation: z.string().nullable(),
    provider: z.string().nullable(),
    model: z.string().nullable(),
    workflow_id: z.string().nullable(),
    tools: z.array(z.string()).describe('The tools the request offered the model (a proxied or executed request, or the permit request\'s `tools`), by name, each once; empty when none. Never their definitions.'),
    estimate: z.looseObject({ input_tokens: z.number().int().nullable(), output_tokens: z.number().int().nullable(), cost_usd_micros: z.number().int().nullable() }),
    reservation: z.looseObject({ state: z.string() }),
  })
  .meta({ id: 'Permit' });

export const permitListSchema = z
  .object({ object: z.literal('list'), data: z.array(permitSchema), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .meta({ id: 'PermitList' });

const iso = z.string();
const attestationSchema = z
  .looseObject({ id: z.string(), permit_id: z.string(), child_permit_id: z.string(), attested_by: z.string(), attested_at: iso, reason: z.string(), recorded_at: iso, recorded_by: z.string() })
  .meta({ id: 'PermitAttestation' });

export const permitDryRunSchema = z
  .looseObject({
    object: z.literal('permit_dry_run'),
    dry_run: z.literal(true),
    permit_id: z.null(),
    decision: z.enum(['allow', 'deny', 'review', 'throttle']),
    reason_code: z.string(),
    project_id: z.string(),
    tools: z.array(z.string()).describe('The tools the request names (its `tools`); empty when none.'),
    estimate: z.looseObject({ input_tokens: z.number().int(), output_tokens: z.number().int(), cost_usd_micros: z.number().int().nullable() }),
  })
  .meta({ id: 'PermitDryRun' });

export const permitAttestationResultSchema = z
  .looseObject({ object: z.literal('permit_attestation'), attestation: attestationSchema, permit: permitSchema, allowed_permit: permitSchema })
  .meta({ id: 'PermitAttestationResult' });

const usageReportFields = {
  usage_idempotency_key: z.string(),
  status: z.string(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  billed_cost_usd_micros: z.number().int(),
  reported_at: iso,
};

export const permitUsageReportSchema = z
  .looseObject({ object: z.literal('permit_usage_report'), permit_id: z.string(), ...usageReportFields, reservation: z.looseObject({ state: z.string() }) })
  .meta({ id: 'PermitUsageReport' });

export const permitUsageRollupSchema = z
  .looseObject({
    object: z.literal('permit_usage'),
    permit_id: z.string(),
    status: z.string(),
    report: z.union([z.looseObject(usageReportFields), z.null()]),
    variance_usd_micros: z.number().int().nullable(),
    lineage_totals: z.looseObject({ permits: z.number().int(), reports: z.number().int(), billed_cost_usd_micros: z.number().int(), permit_ids: z.array(z.string()) }),
  })
  .meta({ id: 'PermitUsage' });

const evidenceSchema = z
  .looseObject({ object: z.literal('permit_evidence'), id: z.string(), permit_id: z.string(), type: z.string(), submitted_by: z.string(), created_at: iso })
  .meta({ id: 'PermitEvidence' });
export const permitEvidenceSchema = evidenceSchema;
export const permitEvidenceListSchema = z.looseObject({ object: z.literal('list'), permit_id: z.string(), data: z.array(evidenceSchema) }).meta({ id: 'PermitEvidenceList' });

export const permitBundleSchema = z
  .looseObject({
    object: z.literal('permit_bundle'),
    permit: permitSchema,
    events: z.array(z.looseObject({ event_type: z.string(), timestamp: iso })),
    usage_report: z.union([z.looseObject(usageReportFields), z.null()]),
    evidence: z.array(evidenceSchema),
    child_permit_ids: z.array(z.string()),
  })
  .meta({ id: 'PermitBundle' });

export const permitLineageSchema = z
  .looseObject({ object: z.literal('permit_lineage'), permit_id: z.string(), root_permit_id: z.string(), chain: z.array(z.string()), ancestors: z.array(permitSchema), children: z.array(permitSchema) })
  .meta({ id: 'PermitLineage' });
