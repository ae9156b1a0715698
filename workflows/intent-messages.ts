/**
 * Messages of intentWorkflow, shared by the workflow, the API routes and the reservation client.
 * Only definitions and plain types here (no workflow APIs are called at import time).
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

export type LiveIntentStatus = 'active' | 'completed' | 'expired';

/** Failure types the validators and handlers throw (ApplicationFailure.type); the API maps them. */
export const INTENT_FAILURES = {
  versionConflict: 'workflow_intent.amendment_version_conflict',
  notActive: 'workflow_intent.not_active',
  invalid: 'workflow_intent.invalid_request',
} as const;

/** Default number of handled Updates per run before continue-as-new (the server allows 2,000). */
export const DEFAULT_CAN_AFTER_UPDATES = 500;

export interface IntentState {
  projectId: string;
  workflowId: string;
  status: LiveIntentStatus;
  version: number;
  expectedCalls: number | null;
  maxCalls: number | null;
  actualCalls: number;
  /** Epoch ms; null without max_duration_seconds. */
  expiresAtMs: number | null;
  /** Projection inputs that amendments keep (model and per-call token estimates). */
  projection: {
    expected_model?: string;
    expected_input_tokens_per_call?: number;
    expected_output_tokens_per_call?: number;
  };
  /** Runs so far (1 on the first run, +1 per continue-as-new). */
  run: number;
  /** Updates handled across all runs. */
  totalUpdatesHandled: number;
}

export interface IntentWorkflowInput {
  state: IntentState;
  /** Handled Updates per run before continue-as-new (tests pass a low value). */
  canAfterUpdates?: number;
  /** Counter value last written to PostgreSQL (carried across continue-as-new). */
  persistedActualCalls?: number;
}

export interface AmendArgs {
  /** wam_ id chosen by the API, so a retried activity writes the same record. */
  amendmentId: string;
  ifMatchVersion: number;
  newExpectedCalls?: number | null;
  newMaxCalls?: number | null;
  reasonProvided?: string | null;
}

export interface AmendmentView {
  id: string;
  applied_against_version: number;
  previous_expected_calls: number | null;
  new_expected_calls: number | null;
  previous_max_calls: number | null;
  new_max_calls: number | null;
  reason_provided: string | null;
  amendment_signature_b64: string;
  created_at: string;
}

export interface AmendResult {
  workflow_id: string;
  status: LiveIntentStatus;
  version: number;
  amendment: AmendmentView;
  projected_cost: Record<string, unknown>;
}

export interface CompleteArgs {
  reasonProvided?: string | null;
}

export interface Reconciliation {
  authoritative_actual_calls: number;
  cached_actual_calls: number;
  counter_divergence_detected: boolean;
}

export interface CompleteResult {
  workflow_id: string;
  status: 'completed';
  version: number;
  actual_calls: number;
  expected_calls: number | null;
  max_calls: number | null;
  completed_at: string;
  reconciliation: Reconciliation;
}

export interface ReserveResult {
  /** Calls granted, 0..requested; never takes actual_calls above max_calls. */
  granted: number;
  status: LiveIntentStatus;
  actualCalls: number;
  maxCalls: number | null;
}

export const amendUpdate = defineUpdate<AmendResult, [AmendArgs]>('amend');
export const completeUpdate = defineUpdate<CompleteResult, [CompleteArgs]>('complete');
export const reserveCallsUpdate = defineUpdate<ReserveResult, [number]>('reserveCalls');
export const stateQuery = defineQuery<IntentState>('state');

/** Temporal workflow id of a declared intent. */
export function intentTemporalWorkflowId(projectId: string, workflowId: string): string {
  return `intent:${projectId}:${workflowId}`;
}
