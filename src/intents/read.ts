/** GET /v1/workflows/{id}: the stored intent, overlaid with the workflow's live state while it runs. */
import { amendmentView } from './views';
import { errors } from '../errors';
import { AmendmentRecord, findIntent, listAmendments } from '../db/repositories/intents';
import { intentTemporalWorkflowId, IntentState, stateQuery } from '../../workflows/intent-messages';
import { queryWithin } from '../temporal/bounded-query';
import type { IntentServiceDeps } from './deps';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function amendmentItem(a: AmendmentRecord) {
  return { ...amendmentView(a), projected_cost: a.projected_cost };
}

/** Live state by query while the workflow runs (bounded wait), else null. */
async function liveState(deps: IntentServiceDeps, projectId: string, workflowId: string): Promise<IntentState | null> {
  return queryWithin(deps.temporal.client.workflow.getHandle(intentTemporalWorkflowId(projectId, workflowId)), stateQuery);
}

/** GET /v1/workflows/{workflow_id}: PostgreSQL record, overlaid with live state while active. */
export async function readIntent(deps: IntentServiceDeps, projectId: string, workflowId: string): Promise<Record<string, unknown>> {
  let row = await findIntent(deps.db, projectId, workflowId);
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
      row = (await findIntent(deps.db, projectId, workflowId)) ?? row;
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

