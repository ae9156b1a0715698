/**
 * The governance contract: what the execution, permit and proxy paths hand to governance and the
 * decision they get back (the spec's permit decision shape).
 */
import type { Operation, ProviderId } from '../providers/types';

export type Decision = 'allow' | 'deny' | 'review' | 'throttle';

export interface DecisionDetails {
  decision: Decision;
  code: string;
  reason: string;
  reason_detail: { category: string; kind: string; outcome: string };
  /** Figures that triggered the decision (cap, current spend, projected cost, retry-after, ...). */
  [figure: string]: unknown;
}

export interface PermitDecision {
  permit_id: string;
  decision: Decision;
  reason_code: string; // budget.*, policy.*, policy.active_policy_candidate on allow, prompt_firewall_blocked
  display_reason: string;
  decision_details: DecisionDetails;
  actions: { type: string; message: string }[];
  metadata: { evaluated_at: string; [k: string]: unknown };
  /** Seconds, for throttle decisions. */
  retry_after_seconds?: number;
  expires_at: string | null;
}

export interface GovernanceRequest {
  projectId: string;
  /** Request id of the execution (exec_...) or of the permit-first call. */
  requestId: string;
  /** The route family asking: executions, execute, proxy:<provider>, permits. */
  route: string;
  operation: Operation;
  provider: ProviderId;
  model: string;
  estimatedInputTokens: number;
  estimatedOutputTokens: number;
  /** Null when the model has no pricing → budget.pricing_unavailable. */
  estimatedCostMicros: number | null;
  workflowId?: string | null;
  metadata?: Record<string, string>;
  /**
   * Inspectable text for the prompt firewall. Omit (undefined) on routes that do not run the
   * firewall (permits); an empty array means "nothing inspectable".
   */
  inspectableText?: string[];
}
