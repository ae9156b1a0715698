import { z } from 'zod';

/** Signed checkpoints, proofs, verification keys, compliance exports and execution metrics. */

const iso = z.string();
const b64 = z.string();

export const checkpointSchema = z
  .looseObject({ object: z.literal('checkpoint'), origin: z.string(), tree_size: z.number().int(), root_hash: b64, key_id: z.string(), issued_at: iso, note: z.string() })
  .meta({ id: 'Checkpoint' });

export const checkpointPublicKeySchema = z
  .looseObject({ object: z.literal('checkpoint_public_key'), key_id: z.string(), algorithm: z.literal('Ed25519'), key_name: z.string(), note_verifier_key: z.string(), public_key_b64: b64, valid_from: iso })
  .meta({ id: 'CheckpointPublicKey' });

export const verificationKeyListSchema = z
  .looseObject({
    object: z.literal('list'),
    data: z.array(z.looseObject({ key_id: z.string(), algorithm: z.string(), purpose: z.string(), public_key_b64: b64, valid_from: iso, status: z.enum(['active', 'retired']) })),
  })
  .meta({ id: 'VerificationKeyList' });

export const permitBindingKeyListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(z.looseObject({ kid: z.string(), algorithm: z.literal('Ed25519'), public_key_b64: b64, public_key_pem: z.string() })) })
  .meta({ id: 'PermitBindingKeyList' });

export const inclusionProofSchema = z
  .looseObject({
    object: z.literal('inclusion_proof'),
    event_id: z.string().nullable(),
    position: z.number().int(),
    leaf_index: z.number().int(),
    tree_size: z.number().int(),
    leaf_hash: b64,
    proof: z.array(b64),
    root_hash: b64,
    checkpoint: z.union([checkpointSchema, z.null()]),
  })
  .meta({ id: 'InclusionProof' });

export const consistencyProofSchema = z
  .looseObject({
    object: z.literal('consistency_proof'),
    first: z.number().int(),
    second: z.number().int(),
    first_root_hash: b64,
    second_root_hash: b64,
    proof: z.array(b64),
    first_checkpoint: z.union([checkpointSchema, z.null()]),
    second_checkpoint: z.union([checkpointSchema, z.null()]),
  })
  .meta({ id: 'ConsistencyProof' });

export const complianceExportSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('compliance_export'),
    status: z.string(),
    window: z.looseObject({ since: iso.nullable(), until: iso.nullable() }),
    include: z.array(z.string()),
    bundle: z.union([z.looseObject({ sha256: z.string().nullable(), download_url: z.string(), format: z.literal('tar') }), z.null()]),
    created_at: iso,
  })
  .meta({ id: 'ComplianceExport' });

export const complianceExportListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(complianceExportSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ComplianceExportList' });

export const executionMetricsSchema = z
  .looseObject({
    object: z.literal('execution_metrics'),
    project_id: z.string(),
    window: z.looseObject({ from: iso, to: iso }),
    total: z.number().int(),
    counts: z.looseObject({ completed: z.number().int(), failed: z.number().int(), denied: z.number().int() }),
    latency_ms: z.looseObject({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable(), max: z.number().nullable() }),
    spend: z.looseObject({ total_usd_micros: z.number().int() }),
  })
  .meta({ id: 'ExecutionMetrics' });
