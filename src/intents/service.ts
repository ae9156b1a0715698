import type { Client } from '@temporalio/client';
import { amendmentView } from './views';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import type { Logger } from '../logger';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import {
  AmendmentRecord,
  findWorkflowIntent,
  insertWorkflowIntent,
  listAmendments,
  setTemporalRunId,
  WorkflowIntentRecord,
} from '../db/repositories/workflow-intents';
import { monthlyBudgetSnapshot } from '../governance/budget-snapshot';
import { canonicalDeclaration, canonicalIntentHash, WorkflowIntentBody } from './canonical';
import { integritySigner } from './signing';
import { projectCost, ProjectionError } from './projection';
import {
  amendUpdate,
  AmendResult,
  completeUpdate,
  CompleteResult,
  INTENT_FAILURES,
  intentTemporalWorkflowId,
  IntentState,
  IntentWorkflowInput,
  stateQuery,
} from '../../workflows/intent-messages';
import { SA } from '../../workflows/search-attributes';
import type { intentWorkflow } from '../../workflows/intent';

export interface IntentServiceDeps {
  db: Db;
  config: Config;
  clock: Clock;
  logger: Logger;
  temporal: { client: Client; taskQueue: string };
}

export interface Declarer {
  projectId: string;
  keyId: string;
}

export interface DeclareBody {
  workflow_id: string;
  intent: WorkflowIntentBody;
  budget_envelope_id?: string | null;
}

export interface DeclareOptions {
  /** Test-only: continue-as-new after this many handled Updates. */
  canAfterUpdates?: number;
  declaredVia?: { sdk: string | null; sdk_version: string | null };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function intentConflict(existing: WorkflowIntentRecord): ApiError {
  return errors.conflict(
    'workflow_intent.idempotency_conflict',
    `Workflow ${existing.workflow_id} was already declared with a different intent`,
    { workflow_id: existing.workflow_id, existing_canonical_intent_hash: existing.canonical_intent_hash },
  );
}

/** The POST /v1/workflows response of a stored declaration (accepted or rejected shape). */
export function declarationResponse(r: WorkflowIntentRecord): Record<string, unknown> {
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

function workflowInput(r: WorkflowIntentRecord, opts: DeclareOptions): IntentWorkflowInput {
  const intent = r.intent as WorkflowIntentBody;
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
export async function ensureIntentWorkflow(deps: IntentServiceDeps, r: WorkflowIntentRecord, opts: DeclareOptions = {}): Promise<void> {
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
      staticSummary: `Workflow intent ${r.workflow_id} (project ${r.project_id})`,
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
export async function declareWorkflowIntent(
  deps: IntentServiceDeps,
  who: Declarer,
  body: DeclareBody,
  opts: DeclareOptions = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const hash = canonicalIntentHash(body.intent);
  const replay = async (existing: WorkflowIntentRecord) => {
    if (existing.canonical_intent_hash !== hash) throw intentConflict(existing);
    if (existing.status === 'active') await ensureIntentWorkflow(deps, existing, opts);
    return { status: 200, body: declarationResponse(existing) };
  };
  const existing = await findWorkflowIntent(deps.db, who.projectId, body.workflow_id);
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
  const inserted = await insertWorkflowIntent(deps.db, {
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
    const winner = await findWorkflowIntent(deps.db, who.projectId, body.workflow_id);
    if (!winner) throw errors.internal();
    return replay(winner);
  }
  if (inserted.status === 'active') await ensureIntentWorkflow(deps, inserted, opts);
  return { status: inserted.status === 'active' ? 201 : 200, body: declarationResponse(inserted) };
}

function notActive(r: { workflow_id: string; status: string }): ApiError {
  return errors.conflict('workflow_intent.not_active', `Workflow ${r.workflow_id} is ${r.status}; only active workflows can be amended or completed`, {
    workflow_id: r.workflow_id,
    status: r.status,
  });
}

async function requireActive(deps: IntentServiceDeps, projectId: string, workflowId: string): Promise<WorkflowIntentRecord> {
  const row = await findWorkflowIntent(deps.db, projectId, workflowId);
  if (!row) throw errors.notFound('Workflow', workflowId);
  if (row.status !== 'active') throw notActive(row);
  return row;
}

/** Maps a failed amend/complete Update to the API error contract. */
async function mapUpdateError(deps: IntentServiceDeps, projectId: string, workflowId: string, err: unknown): Promise<never> {
  const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
  if (cause instanceof ApplicationFailure) {
    const details = (cause.details?.[0] ?? {}) as Record<string, unknown>;
    if (cause.type === INTENT_FAILURES.versionConflict) {
      throw errors.conflict('workflow_intent.amendment_version_conflict', cause.message, details);
    }
    if (cause.type === INTENT_FAILURES.notActive) throw notActive({ workflow_id: workflowId, status: typeof details.status === 'string' ? details.status : 'not active' });
  }
  if (err instanceof WorkflowNotFoundError || (err as Error)?.name === 'WorkflowNotFoundError') {
    const row = await findWorkflowIntent(deps.db, projectId, workflowId);
    if (row && row.status !== 'active') throw notActive(row);
  }
  throw err;
}

export async function amendWorkflowIntent(
  deps: IntentServiceDeps,
  projectId: string,
  workflowId: string,
  body: { if_match_version: number; new_expected_calls?: number; new_max_calls?: number; reason_provided?: string },
): Promise<AmendResult> {
  await requireActive(deps, projectId, workflowId);
  const handle = deps.temporal.client.workflow.getHandle(intentTemporalWorkflowId(projectId, workflowId));
  try {
    return await handle.executeUpdate(amendUpdate, {
      args: [
        {
          amendmentId: newId('wam'),
          ifMatchVersion: body.if_match_version,
          newExpectedCalls: body.new_expected_calls ?? null,
          newMaxCalls: body.new_max_calls ?? null,
          reasonProvided: body.reason_provided ?? null,
        },
      ],
    });
  } catch (err) {
    return mapUpdateError(deps, projectId, workflowId, err);
  }
}

export async function completeWorkflowIntent(
  deps: IntentServiceDeps,
  projectId: string,
  workflowId: string,
  body: { reason_provided?: string },
): Promise<CompleteResult> {
  await requireActive(deps, projectId, workflowId);
  const handle = deps.temporal.client.workflow.getHandle(intentTemporalWorkflowId(projectId, workflowId));
  try {
    return await handle.executeUpdate(completeUpdate, { args: [{ reasonProvided: body.reason_provided ?? null }] });
  } catch (err) {
    return mapUpdateError(deps, projectId, workflowId, err);
  }
}

function amendmentItem(a: AmendmentRecord) {
  return { ...amendmentView(a), projected_cost: a.projected_cost };
}

/** Live state by query while the workflow runs (bounded wait), else null. */
async function liveState(deps: IntentServiceDeps, projectId: string, workflowId: string): Promise<IntentState | null> {
  const handle = deps.temporal.client.workflow.getHandle(intentTemporalWorkflowId(projectId, workflowId));
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      handle.query(stateQuery),
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), 2000);
      }),
    ]);
  } catch {
    return null;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** GET /v1/workflows/{workflow_id}: PostgreSQL record, overlaid with live state while active. */
export async function readWorkflowIntent(deps: IntentServiceDeps, projectId: string, workflowId: string): Promise<Record<string, unknown>> {
  let row = await findWorkflowIntent(deps.db, projectId, workflowId);
  if (!row) throw errors.notFound('Workflow', workflowId);
  let version = row.version;
  let actual = row.actual_calls;
  let expected = row.expected_calls;
  let max = row.max_calls;
  let status: string = row.status;
  if (row.status === 'active') {
    const live = await liveState(deps, projectId, workflowId);
    if (live && live.status === 'active') {
      ({ version, actualCalls: actual, expectedCalls: expected, maxCalls: max } = live);
    } else if (live) {
      // Closing right now: the persisted record is final or about to be.
      row = (await findWorkflowIntent(deps.db, projectId, workflowId)) ?? row;
      ({ version, actual_calls: actual, expected_calls: expected, max_calls: max, status } = row);
    }
  }
  const amendments = row.status === 'rejected' ? [] : await listAmendments(deps.db, projectId, workflowId);
  return {
    workflow_id: row.workflow_id,
    status,
    version,
    actual_calls: actual,
    expected_calls: expected,
    max_calls: max,
    drift: {
      expected_calls_exceeded: expected !== null && actual > expected,
      max_calls_exceeded: max !== null && actual >= max,
    },
    intent: row.intent,
    projected_cost: row.projected_cost,
    budget_envelope_id: row.budget_envelope_id,
    declaration: {
      declared_at: iso(row.declared_at),
      declaration_signature_b64: row.declaration_signature_b64,
      canonical_intent_hash: row.canonical_intent_hash,
      declared_by: row.declared_by,
      declared_via: row.declared_via,
    },
    ...(row.status === 'rejected' ? { reason_code: row.reason_code, decision_details: row.decision_details } : {}),
    declared_at: iso(row.declared_at),
    expires_at: iso(row.expires_at),
    completed_at: iso(row.completed_at),
    expired_at: iso(row.expired_at),
    reconciliation: row.reconciliation
      ? {
          authoritative_actual_calls: row.reconciliation.authoritative_actual_calls,
          cached_actual_calls: row.reconciliation.cached_actual_calls,
          counter_divergence_detected: row.reconciliation.counter_divergence_detected,
        }
      : null,
    amendments: amendments.map(amendmentItem),
  };
}
