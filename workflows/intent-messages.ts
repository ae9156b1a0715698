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
  /**
   * Outstanding call leases by lease id (absent on intents started before leases existed). Calls
   * committed = actualCalls - Σ used + Σ size ≤ maxCalls at all times.
   */
  leases?: Record<string, CallLease>;
  /**
   * Leases closed lately (returned by their holder or settled from permits), by lease id, oldest
   * first: a holder's report of calls given back after the close still un-counts them.
   */
  closedLeases?: Record<string, ClosedLease>;
}

/** What a closed lease counted, kept `LEASE_LATE_RETURN_MS` after its close. */
export interface ClosedLease {
  /** The lease's `used` when it closed. */
  used: number;
  /** Its part of actualCalls (used less the calls given back); only comes down. */
  counted: number;
  /** Epoch ms (workflow time). */
  closedAtMs: number;
}

/** A block of calls granted to one API process (docs/decisions/call-leases.md). */
export interface CallLease {
  /** The API process holding it (diagnostics). */
  holder: string;
  /** Calls the holder may consume in total on this lease (only grows while the lease is open). */
  size: number;
  /** Calls the holder reported consumed (included in actualCalls, less `returned`). */
  used: number;
  /** Of `used`, calls the holder gave back after reporting them (governance recorded nothing); absent before give-backs were reported. */
  returned?: number;
  /** Epoch ms (workflow time) after which the holder no longer consumes; settled `LEASE_SETTLE_GRACE_MS` later. */
  deadlineMs: number;
  /** The workflow asked the holder to return it (amend, complete, expiry, reclaim near the ceiling). */
  revoking: boolean;
}

/** Lease validity granted per request (a holder renews before it runs out). */
export const LEASE_TTL_MS = 3_000;
/** After a lease's deadline, the time a holder's last calls have to write their permits before settlement. */
export const LEASE_SETTLE_GRACE_MS = 2_000;
/** A closed lease is remembered this long for calls its holder gives back late (governance failing after the lease went back). */
export const LEASE_LATE_RETURN_MS = 30_000;
/** PostgreSQL channel on which revocations are announced to lease holders (payload: `<temporal id> <lease id>,…`). */
export const LEASE_REVOKE_CHANNEL = 'tollgate_intent_leases';
/** Permit metadata key carrying the lease a call consumed (settlement of a lease whose holder died). */
export const PERMIT_LEASE_KEY = 'intent_lease';

export interface LeaseArgs {
  /** Chosen by the holder (random, one open lease per holder and intent); a retried request is a renewal. */
  leaseId: string;
  holder: string;
  /** Calls consumed on this lease so far (cumulative, so a retried request is harmless). */
  used: number;
  /**
   * Of `used`, calls given back after an earlier request reported them (their governance failed
   * before a permit); cumulative like `used`. Absent from holders older than give-back reports.
   */
  returned?: number;
  /** Calls the holder is waiting for right now (granted first, also near the ceiling). */
  need: number;
  /** Additional calls wanted beyond the lease's size, `need` included (sized from the holder's rate). */
  want: number;
  /** Close the lease; `used` is final. */
  release?: boolean;
}

export interface LeaseResult {
  /** Total calls the lease may consume (≥ used); the holder consumes locally up to it. */
  size: number;
  /** The lease is valid for this long from when the request was sent (≤ the time to the intent's expiry). */
  validForMs: number;
  /** The lease is closed (released, or never opened because nothing was granted). */
  closed: boolean;
  /** The workflow wants the lease back: stop consuming and release it. */
  revoked: boolean;
  status: LiveIntentStatus;
  actualCalls: number;
  maxCalls: number | null;
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

/** What an amendment changed: the version it applied to, the ceilings before and after, and why. */
export interface AmendmentChange {
  applied_against_version: number;
  previous_expected_calls: number | null;
  new_expected_calls: number | null;
  previous_max_calls: number | null;
  new_max_calls: number | null;
  reason_provided: string | null;
}

export interface AmendmentView extends AmendmentChange {
  id: string;
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
export const leaseCallsUpdate = defineUpdate<LeaseResult, [LeaseArgs]>('leaseCalls');
export const stateQuery = defineQuery<IntentState>('state');

/** Temporal workflow id of a declared intent. */
export function intentTemporalWorkflowId(projectId: string, workflowId: string): string {
  return `intent:${projectId}:${workflowId}`;
}
