/**
 * What the API hands the executionWorkflow and what its activities pass along. Plain JSON (it
 * crosses Temporal), no functions.
 */
import type { ProviderId } from '../config';
import type { ChatMessage, InputItem, Operation, ProviderFailure, ProviderResult, Usage } from '../providers/types';
import type { ExecutionEnvelope, ExecutionRoute } from './envelope';
import type { DispatchStart } from './lifecycle';

export interface ExecutionInput {
  executionId: string;
  permitId: string;
  projectId: string;
  route: ExecutionRoute;
  mode: 'sync' | 'stream';
  /** ISO time the API accepted the request (envelope created_at / timing.started_at). */
  createdAt: string;
  request: {
    operation: Operation;
    messages?: ChatMessage[];
    inputs?: InputItem[];
    parameters?: { max_output_tokens?: number; temperature?: number; top_p?: number };
    /** provider_options by provider id; the dispatched target's entry is passed to its adapter. */
    providerOptions?: Partial<Record<ProviderId, Record<string, unknown>>>;
  };
  routing: RoutingPlan;
  /** The intent's workflow_id; the old field name stays because job workflow inputs in Temporal histories carry it. */
  workflowIntentId: string | null;
  idempotencyKey: string | null;
  /** The API key the call came with (null where none did, e.g. a call recorded by an operator tool). */
  keyId: string | null;
  /** The async job the call runs for. */
  jobId?: string;
  /** The realtime session whose turn this call is (src/sessions/turn-record.ts). */
  sessionId?: string;
  /** /v1/execute only. */
  resolved?: { provider: string; model: string; alias: string | null };
  /** X-Svc-Workflow-Id given but its call reservation was refused: a denied permit, no dispatch. */
  reservationDenied?: { reason_code: string; message: string };
  dispatchTimeoutMs: number;
  heartbeatTimeoutMs: number;
}

/** What recording reads of a call: a session turn its session's own ceilings denied has no permit. */
export type RecordedCall = Omit<ExecutionInput, 'permitId'> & { permitId: string | null };

export interface GovernOutcome {
  decision: 'allow' | 'deny' | 'review' | 'throttle';
  reason_code: string;
  display_reason: string;
  actions: { type: string; message: string }[];
  retry_after_seconds?: number;
  /** Hard caps: the output-token ceiling governance set or lowered; every dispatch of the call sends it. */
  max_output_tokens?: number;
  /** An allowed call the prompt firewall let through: categories masked before dispatch (the surface sends its masked copy) and flagged. */
  firewall?: { redacted: string[]; flagged: string[] };
  /** An allowed call of the in-process pipeline: its dispatch start, which its record keeps (src/executions/lifecycle.ts). */
  dispatch?: DispatchStart;
}

/** A provider call that was made (one per target tried). */
export interface AttemptRecord {
  provider: ProviderId;
  model: string;
  sentAt: string;
  receivedAt: string;
  ok: boolean;
  status: number | null;
  failureKind?: ProviderFailure['kind'];
}

export type DispatchOutcome =
  | {
      ok: true;
      target: Target;
      result: ProviderResult;
      attempts: AttemptRecord[];
      fallbackOccurred: boolean;
    }
  | {
      ok: false;
      /** provider: the upstream failed; aborted: the stream's client went away. */
      kind: 'provider' | 'aborted';
      target: Target;
      failure: Omit<ProviderFailure, 'native'>;
      partialUsage: Usage | null;
      attempts: AttemptRecord[];
      fallbackOccurred: boolean;
    };

/**
 * What the dispatch activity returns: the outcome, and the envelope when it also recorded the
 * execution itself (it is handed the governance outcome; older schedules without it, or a failed
 * recording, leave `recorded` unset and the workflow records with its local activity).
 */
export type DispatchResult = DispatchOutcome & { recorded?: ExecutionEnvelope };

export type RecordInput =
  | { kind: 'governed_out'; gov: GovernOutcome }
  | { kind: 'dispatched'; gov: GovernOutcome; outcome: DispatchOutcome }
  /** The dispatch activity did not finish (worker died mid-call, timed out): outcome unknown. */
  | { kind: 'interrupted'; gov: GovernOutcome; message: string; estimatedInputTokens?: number }
  /** An allowed session turn: the client called its provider, Tollgate saw the usage it reported (or none). */
  | { kind: 'session_turn'; gov: GovernOutcome; turn: TurnOutcome };

/**
 * What Tollgate knows of an allowed session turn's provider call, which the client made itself:
 * the usage it settled with its cost at the session's realtime prices, or none when the session
 * closed with the turn unsettled (`closedBy`: the release reason of its reservation).
 */
export interface TurnOutcome {
  /** The session turn (`session_turns.id`) and its number in the session. */
  turnId: string;
  turnNumber: number | null;
  settled: { usage: Usage; costMicros: number } | null;
  closedBy?: string;
}

export type RoutingReason = 'explicit_request' | 'default_model_for_provider' | 'provider_inferred_from_model' | 'operation_default';

export interface Target {
  provider: ProviderId;
  model: string;
}

export interface RoutingPlan {
  requested_provider: ProviderId | null;
  requested_model: string | null;
  primary: Target;
  /** Concrete fallback targets, tried in order after the primary fails with a retryable error. */
  fallback: Target[];
  reason_code: RoutingReason;
}
