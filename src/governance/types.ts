/**
 * The governance contract: what the execution, permit and proxy paths hand to governance and the
 * decision they get back (the spec's permit decision shape).
 */
import type { Operation, ProviderId } from '../providers/types';
import type { InspectableText } from './firewall/roles';
import type { FirewallCategory } from './firewall/detectors';
import type { RedactionResult, RedactOptions } from './firewall/redact';

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
  /**
   * An allow that set or lowered the call's output-token ceiling so its worst case fits every cap
   * (hard caps): the ceiling the dispatch must send. Absent when the caller's ceiling stands.
   */
  max_output_tokens?: number;
}

/**
 * A call that Tollgate dispatches and whose output is priced per token: what governance needs to
 * size its reservation as the worst case and to set or lower its output-token ceiling (hard caps).
 */
export interface OutputCeilingSpec {
  /** The caller's output-token ceiling; null when the request sets none. */
  requested: number | null;
  /** Worst-case cost (micro-USD) of the call with this output ceiling, over every target it may reach; null without pricing. */
  costAt(ceiling: number): number | null;
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
  /**
   * The intent the call is joined to refused it (unknown in the project, not active, at
   * its ceiling): a deny before any other check, with the intent's reason code, as executions'
   * reservation denial (src/executions/reservation-denial.ts).
   */
  intentRefusal?: { reason_code: string; message: string };
  metadata?: Record<string, string>;
  /**
   * The tools the request offers the model, by name (a built-in tool by its type): the proxies read
   * them from the native body, executions from the primary target's provider options, permits take
   * the request's `tools`. A rule's `match.tool` matches any of them; the permit keeps them.
   */
  tools?: string[];
  /**
   * Inspectable text for the prompt firewall. Omit (undefined) on routes that do not run the
   * firewall (permits); an empty array means "nothing inspectable".
   */
  inspectableText?: InspectableText[];
  /**
   * Set by the surfaces that can mask their request (executions, execute, proxies): masks the
   * given categories in a copy of the request the surface then dispatches, and returns the texts of
   * that copy (checked here: a value still found is blocked) and the counts per category. Null when
   * this request cannot be masked. Without it, a `redact` action blocks (jobs, session turns).
   */
  redact?: (categories: FirewallCategory[], opts: RedactOptions) => RedactionResult | null;
  /** Set on dispatched text-producing calls (executions, execute, jobs, proxies); permits have none. */
  output?: OutputCeilingSpec;
}
