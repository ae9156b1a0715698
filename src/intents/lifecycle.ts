/** POST /v1/workflows/{id}/amend and /complete: Updates of the intent workflow, mapped to the API's errors. */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import { findIntent, IntentRecord } from '../db/repositories/intents';
import { amendUpdate, AmendResult, completeUpdate, CompleteResult, INTENT_FAILURES, intentTemporalWorkflowId } from '../../workflows/intent-messages';
import type { IntentServiceDeps } from './deps';

function notActive(r: { workflow_id: string; status: string }): ApiError {
  return errors.conflict('workflow_intent.not_active', `Workflow ${r.workflow_id} is ${r.status}; only active workflows can be amended or completed`, {
    workflow_id: r.workflow_id,
    status: r.status,
  });
}

async function requireActive(deps: IntentServiceDeps, projectId: string, workflowId: string): Promise<IntentRecord> {
  const row = await findIntent(deps.db, projectId, workflowId);
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
    const row = await findIntent(deps.db, projectId, workflowId);
    if (row && row.status !== 'active') throw notActive(row);
  }
  throw err;
}

export async function amendIntent(
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

export async function completeIntent(
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

