/** POST /v1/workflows: a declared intent — projected, signed, stored, and its intentWorkflow started. */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import { findIntent, insertIntent, setTemporalRunId, IntentRecord } from '../db/repositories/intents';
import { monthlyBudgetSnapshot } from '../governance/budget-snapshot';
import { canonicalDeclaration, canonicalIntentHash, IntentBody } from './canonical';
import { integritySigner } from './signing';
import { projectCost, ProjectionError } from './projection';
import { intentTemporalWorkflowId, IntentState, IntentWorkflowInput } from '../../workflows/intent-messages';
import { SA } from '../../workflows/search-attributes';
import type { intentWorkflow } from '../../workflows/intent';
import type { IntentServiceDeps } from './deps';

export interface Declarer {
  projectId: string;
  keyId: string;
}

export interface DeclareBody {
  workflow_id: string;
  intent: IntentBody;
  budget_envelope_id?: string | null;
}

export interface DeclareOptions {
  /** Test-only: continue-as-new after this many handled Updates. */
  canAfterUpdates?: number;
  declaredVia?: { sdk: string | null; sdk_version: string | null };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function intentConflict(existing: IntentRecord): ApiError {
  return errors.conflict(
    'workflow_intent.idempotency_conflict',
    `Workflow ${existing.workflow_id} was already declared with a different intent`,
    { workflow_id: existing.workflow_id, existing_canonical_intent_hash: existing.canonical_intent_hash },
  );
}

/** The POST /v1/workflows response of a stored declaration (accepted or rejected shape). */
export function declarationResponse(r: IntentRecord): Record<string, unknown> {
  if (r.status === 'rejected') {
    return {
      workflow_id: r.workflow_id,
      decision: 'rejected',
      reason_code: r.reason_code,
      projected_cost: r.projected_cost,
      decision_details: r.decision_details,
      canonical_intent_hash: r.canonical_intent_hash,
    };
  }
  return {
    workflow_id: r.workflow_id,
    decision: 'accepted',
    status: r.status,
    version: r.version,
    actual_calls: r.actual_calls,
    expected_calls: r.expected_calls,
    max_calls: r.max_calls,
    projected_cost: r.projected_cost,
    declared_by: r.declared_by,
    declared_via: r.declared_via,
    declaration_signature_b64: r.declaration_signature_b64,
    canonical_intent_hash: r.canonical_intent_hash,
    budget_envelope_id: r.budget_envelope_id,
    declared_at: iso(r.declared_at),
    expires_at: iso(r.expires_at),
  };
}

function workflowInput(r: IntentRecord, opts: DeclareOptions): IntentWorkflowInput {
  const intent = r.intent as IntentBody;
  const projection: IntentState['projection'] = {};
  if (intent.expected_model !== undefined) projection.expected_model = intent.expected_model;
  if (intent.expected_input_tokens_per_call !== undefined) projection.expected_input_tokens_per_call = intent.expected_input_tokens_per_call;
  if (intent.expected_output_tokens_per_call !== undefined) projection.expected_output_tokens_per_call = intent.expected_output_tokens_per_call;
  return {
    state: {
      projectId: r.project_id,
      workflowId: r.workflow_id,
      status: 'active',
      version: r.version,
      expectedCalls: r.expected_calls,
      maxCalls: r.max_calls,
      actualCalls: r.actual_calls,
      expiresAtMs: r.expires_at ? r.expires_at.getTime() : null,
      projection,
      run: 1,
      totalUpdatesHandled: 0,
    },
    ...(opts.canAfterUpdates ? { canAfterUpdates: opts.canAfterUpdates } : {}),
  };
}

/** Starts the intent's workflow; a no-op when it runs or already ran (USE_EXISTING / REJECT_DUPLICATE). */
export async function ensureIntentWorkflow(deps: IntentServiceDeps, r: IntentRecord, opts: DeclareOptions = {}): Promise<void> {
  const workflowId = intentTemporalWorkflowId(r.project_id, r.workflow_id);
  try {
    const handle = await deps.temporal.client.workflow.start<typeof intentWorkflow>('intentWorkflow', {
      workflowId,
      taskQueue: deps.temporal.taskQueue,
      args: [workflowInput(r, opts)],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: [
        { key: SA.projectId, value: r.project_id },
        { key: SA.intentId, value: r.workflow_id },
        { key: SA.status, value: 'active' },
      ],
      staticSummary: `Intent ${r.workflow_id} (project ${r.project_id})`,
      staticDetails: [
        `expected_calls: ${r.expected_calls ?? '—'}`,
        `max_calls: ${r.max_calls ?? 'no ceiling'}`,
        `projected cost: ${(r.projected_cost as { amount_micros?: number }).amount_micros ?? '?'} micro-USD`,
        `declared_at: ${iso(r.declared_at)}`,
        `expires_at: ${iso(r.expires_at) ?? 'never'}`,
        `canonical_intent_hash: ${r.canonical_intent_hash}`,
      ].join('\n'),
    });
    await setTemporalRunId(deps.db, r.project_id, r.workflow_id, handle.firstExecutionRunId);
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}

/** POST /v1/workflows. Returns the HTTP status and body. */
export async function declareIntent(
  deps: IntentServiceDeps,
  who: Declarer,
  body: DeclareBody,
  opts: DeclareOptions = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const hash = canonicalIntentHash(body.intent);
  const replay = async (existing: IntentRecord) => {
    if (existing.canonical_intent_hash !== hash) throw intentConflict(existing);
    if (existing.status === 'active') await ensureIntentWorkflow(deps, existing, opts);
    return { status: 200, body: declarationResponse(existing) };
  };
  const existing = await findIntent(deps.db, who.projectId, body.workflow_id);
  if (existing) return replay(existing);

  let projected;
  try {
    projected = projectCost(body.intent);
  } catch (err) {
    if (err instanceof ProjectionError) throw errors.validation([{ path: err.path, message: err.message, code: 'invalid_value' }]);
    throw err;
  }
  const now = deps.clock.now();
  const snapshot = await monthlyBudgetSnapshot(deps.db, who.projectId, now);
  const rejected =
    snapshot.monthly_cap_usd_micros !== null &&
    snapshot.current_monthly_spend_usd_micros + projected.amount_micros > snapshot.monthly_cap_usd_micros;
  const declaredBy = { type: 'api_key', id: who.keyId };
  const declaredVia = opts.declaredVia ?? { sdk: null, sdk_version: null };
  const declaredAt = new Date(now.getTime());
  let signature: string | null = null;
  let kid: string | null = null;
  if (!rejected) {
    const signer = await integritySigner(deps.db, deps.config);
    kid = signer.kid;
    signature = signer.signB64(
      canonicalDeclaration({
        project_id: who.projectId,
        workflow_id: body.workflow_id,
        canonical_intent_hash: hash,
        version: 1,
        declared_at: declaredAt.toISOString(),
        declared_by: declaredBy,
      }),
    );
  }
  const inserted = await insertIntent(deps.db, {
    id: newId('wfi'),
    project_id: who.projectId,
    workflow_id: body.workflow_id,
    status: rejected ? 'rejected' : 'active',
    expected_calls: body.intent.expected_calls ?? null,
    max_calls: body.intent.max_calls ?? null,
    intent: body.intent as Record<string, unknown>,
    canonical_intent_hash: hash,
    projected_cost: rejected
      ? { amount_micros: projected.amount_micros, currency: projected.currency, methodology: projected.methodology }
      : (projected as unknown as Record<string, unknown>),
    reason_code: rejected ? 'workflow_intent.declaration_exceeds_budget_cap' : null,
    decision_details: rejected
      ? {
          current_monthly_spend_usd_micros: snapshot.current_monthly_spend_usd_micros,
          monthly_cap_usd_micros: snapshot.monthly_cap_usd_micros,
          projected_workflow_cost_usd_micros: projected.amount_micros,
        }
      : null,
    declared_by: declaredBy,
    declared_via: declaredVia,
    declaration_signature_b64: signature,
    signature_kid: kid,
    budget_envelope_id: body.budget_envelope_id ?? null,
    declared_at: declaredAt,
    expires_at: body.intent.max_duration_seconds ? new Date(declaredAt.getTime() + body.intent.max_duration_seconds * 1000) : null,
    temporal_workflow_id: rejected ? null : intentTemporalWorkflowId(who.projectId, body.workflow_id),
  });
  if (!inserted) {
    // Lost a race with a concurrent declaration of the same id: it decides.
    const winner = await findIntent(deps.db, who.projectId, body.workflow_id);
    if (!winner) throw errors.internal();
    return replay(winner);
  }
  if (inserted.status === 'active') await ensureIntentWorkflow(deps, inserted, opts);
  return { status: inserted.status === 'active' ? 201 : 200, body: declarationResponse(inserted) };
}

