import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { AmendmentChange } from '../../workflows/intent-messages';
import { pick } from '../pick';

/** The caller's intent as declared (POST /v1/workflows `intent`), after validation. */
export interface IntentBody {
  expected_calls?: number;
  max_calls?: number;
  expected_model?: string;
  expected_input_tokens_per_call?: number;
  expected_output_tokens_per_call?: number;
  max_duration_seconds?: number;
}

/** RFC 8785 (JCS) serialization. Throws on values JSON cannot represent. */
export function canonicalJson(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new Error('value cannot be canonicalized');
  return out;
}

export function sha256Prefixed(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/**
 * The canonical intent: the validated `intent` object with absent fields omitted (an explicit
 * null is treated as absent), serialized with RFC 8785. Key order and number formatting of the
 * request therefore never change the hash.
 */
export function canonicalIntent(intent: IntentBody): string {
  const clean: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(intent)) if (v !== undefined && v !== null) clean[k] = v;
  return canonicalJson(clean);
}

/** `sha256:<hex>` of the canonical intent. */
export function canonicalIntentHash(intent: IntentBody): string {
  return sha256Prefixed(canonicalIntent(intent));
}

export interface DeclarationToSign {
  project_id: string;
  workflow_id: string;
  canonical_intent_hash: string;
  version: number;
  declared_at: string;
  declared_by: { type: string; id: string };
}

/** The bytes `declaration_signature_b64` signs: RFC 8785 JSON of exactly these six fields. */
export function canonicalDeclaration(d: DeclarationToSign): string {
  return canonicalJson({
    project_id: d.project_id,
    workflow_id: d.workflow_id,
    canonical_intent_hash: d.canonical_intent_hash,
    version: d.version,
    declared_at: d.declared_at,
    declared_by: { type: d.declared_by.type, id: d.declared_by.id },
  });
}

const AMENDMENT_CHANGE_FIELDS = [
  'applied_against_version',
  'previous_expected_calls',
  'new_expected_calls',
  'previous_max_calls',
  'new_max_calls',
  'reason_provided',
] as const satisfies readonly (keyof AmendmentChange)[];

/** The change an amendment made (what its signature covers and its view shows), from a record or a request. */
export function amendmentChange(a: AmendmentChange): AmendmentChange {
  return pick(a, AMENDMENT_CHANGE_FIELDS);
}

export interface AmendmentToSign extends AmendmentChange {
  project_id: string;
  workflow_id: string;
  amendment_id: string;
  created_at: string;
}

/** The bytes `amendment_signature_b64` signs: RFC 8785 JSON of exactly these fields. */
export function canonicalAmendment(a: AmendmentToSign): string {
  return canonicalJson({
    project_id: a.project_id,
    workflow_id: a.workflow_id,
    amendment_id: a.amendment_id,
    ...amendmentChange(a),
    created_at: a.created_at,
  });
}
