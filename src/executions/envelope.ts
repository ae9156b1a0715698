/**
 * The execution envelope (spec "Execution envelope"), returned by both execution routes. Exactly the
 * spec's fields; `usage.metrics` only on /v1/executions, `resolved` only on /v1/execute.
 */
import type { ExecutionOutput, OutputAsset, Usage, UsageMetric } from '../providers/types';

export type ExecutionStatus = 'completed' | 'failed' | 'denied';
export type ExecutionRoute = 'executions' | 'execute' | 'proxy' | 'sessions';

export interface EnvelopeRouting {
  requested_provider: string | null;
  requested_model: string | null;
  selected_provider: string | null;
  selected_model: string | null;
  reason_code: string;
  fallback_occurred: boolean;
}

export interface EnvelopeGovernance {
  decision: 'allow' | 'deny';
  reason: string;
  actions: { type: string; message: string }[];
  constraints: null;
  budgets: null;
}

export interface EnvelopeUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cost_usd_micros: number;
  estimated_final: boolean;
  metrics?: UsageMetric[];
}

export interface ExecutionEnvelope {
  id: string;
  object: 'execution';
  created_at: string;
  status: ExecutionStatus;
  status_code: number;
  output: ExecutionOutput | null;
  output_assets: OutputAsset[];
  routing: EnvelopeRouting;
  governance: EnvelopeGovernance;
  usage: EnvelopeUsage;
  timing: { started_at: string; completed_at: string; duration_ms: number };
  error: { code: string; message: string } | null;
  resolved?: { provider: string; model: string; alias: string | null };
}

export const ZERO_USAGE: Omit<EnvelopeUsage, 'metrics'> = {
  input_tokens: 0,
  output_tokens: 0,
  total_tokens: 0,
  cost_usd_micros: 0,
  estimated_final: false,
};

export function envelopeUsage(route: ExecutionRoute, usage: Usage | null, costMicros: number | null): EnvelopeUsage {
  const base: EnvelopeUsage = usage
    ? {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        total_tokens: usage.total_tokens,
        cost_usd_micros: costMicros ?? 0,
        estimated_final: usage.estimated,
      }
    : { ...ZERO_USAGE };
  if (route === 'executions') base.metrics = usage ? usage.metrics : [];
  return base;
}

export interface BuildEnvelopeInput {
  id: string;
  route: ExecutionRoute;
  createdAt: string;
  completedAt: string;
  status: ExecutionStatus;
  statusCode: number;
  output: ExecutionOutput | null;
  outputAssets: OutputAsset[];
  routing: EnvelopeRouting;
  governance: EnvelopeGovernance;
  usage: Usage | null;
  costMicros: number | null;
  error: { code: string; message: string } | null;
  resolved?: { provider: string; model: string; alias: string | null };
}

export function buildEnvelope(i: BuildEnvelopeInput): ExecutionEnvelope {
  // Denied: zero usage and empty metrics, whatever the caller passed (spec rule 2).
  const usage = i.status === 'denied' ? envelopeUsage(i.route, null, null) : envelopeUsage(i.route, i.usage, i.costMicros);
  const started = new Date(i.createdAt);
  const completed = new Date(i.completedAt);
  const env: ExecutionEnvelope = {
    id: i.id,
    object: 'execution',
    created_at: started.toISOString(),
    status: i.status,
    status_code: i.statusCode,
    output: i.status === 'completed' ? i.output : null,
    output_assets: i.status === 'completed' ? i.outputAssets : [],
    routing: i.routing,
    governance: i.governance,
    usage,
    timing: {
      started_at: started.toISOString(),
      completed_at: completed.toISOString(),
      duration_ms: Math.max(0, completed.getTime() - started.getTime()),
    },
    error: i.status === 'completed' ? null : i.error,
  };
  if (i.route === 'execute' && i.resolved) env.resolved = i.resolved;
  return env;
}


/**
 * The envelope as the call record stores it: only what its columns do not hold (the output,
 * routing's request and reason, governance, total tokens and metrics, the error message, the
 * resolved alias). `envelopeOfRow` rebuilds the whole envelope, member for member in the order
 * `buildEnvelope` writes it. Rows stored before hold the whole envelope (`object` present), which
 * is returned as it is.
 */
export interface StoredEnvelope {
  output?: ExecutionOutput | null;
  output_assets?: OutputAsset[];
  routing: Pick<EnvelopeRouting, 'requested_provider' | 'requested_model' | 'reason_code' | 'fallback_occurred'>;
  /** `actions` absent: the one action of a plain allow (PROCEED_ACTIONS). */
  governance: Pick<EnvelopeGovernance, 'decision' | 'reason'> & { actions?: EnvelopeGovernance['actions'] };
  /** `total_tokens` absent: input + output; `metrics` absent: the two token meters of the columns (an `executions` envelope). */
  usage: { total_tokens?: number; metrics?: UsageMetric[] };
  error_message?: string;
  resolved?: ExecutionEnvelope['resolved'];
}

/** The actions of a plain allow, which most calls carry: not stored. */
const PROCEED_ACTIONS = JSON.stringify([{ type: 'proceed', message: 'The request may proceed' }]);

/** The metrics `makeUsage` writes for plain token counts (src/providers/shared/usage.ts), in its order. */
function tokenMetrics(input: number, output: number): UsageMetric[] {
  return [
    { meter: 'input_tokens', quantity: input, unit: 'tokens' },
    { meter: 'output_tokens', quantity: output, unit: 'tokens' },
  ];
}

export function storedEnvelope(e: ExecutionEnvelope): StoredEnvelope {
  const u = e.usage;
  const s: StoredEnvelope = {
    routing: { requested_provider: e.routing.requested_provider, requested_model: e.routing.requested_model, reason_code: e.routing.reason_code, fallback_occurred: e.routing.fallback_occurred },
    governance: { decision: e.governance.decision, reason: e.governance.reason },
    usage: {},
  };
  if (JSON.stringify(e.governance.actions) !== PROCEED_ACTIONS) s.governance.actions = e.governance.actions;
  if (u.total_tokens !== u.input_tokens + u.output_tokens) s.usage.total_tokens = u.total_tokens;
  if (u.metrics && JSON.stringify(u.metrics) !== JSON.stringify(tokenMetrics(u.input_tokens, u.output_tokens))) s.usage.metrics = u.metrics;
  if (e.output !== null) s.output = e.output;
  if (e.output_assets.length > 0) s.output_assets = e.output_assets;
  if (e.error) s.error_message = e.error.message;
  if (e.resolved) s.resolved = e.resolved;
  return s;
}

/** The call record's columns the envelope is rebuilt from. */
export interface EnvelopeColumns {
  id: string;
  route: string;
  status: ExecutionStatus;
  status_code: number;
  provider: string | null;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd_micros: number | string;
  estimated_final: boolean;
  error_code: string | null;
  created_at: Date | string;
  completed_at: Date | string;
  duration_ms: number;
  envelope: StoredEnvelope | ExecutionEnvelope;
}

export function envelopeOfRow(r: EnvelopeColumns): ExecutionEnvelope {
  if ('object' in r.envelope) return r.envelope;
  const s = r.envelope;
  const usage: EnvelopeUsage = {
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    total_tokens: s.usage.total_tokens ?? r.input_tokens + r.output_tokens,
    cost_usd_micros: Number(r.cost_usd_micros),
    estimated_final: r.estimated_final,
  };
  if (s.usage.metrics) usage.metrics = s.usage.metrics;
  else if (r.route === 'executions') usage.metrics = tokenMetrics(r.input_tokens, r.output_tokens);
  const env: ExecutionEnvelope = {
    id: r.id,
    object: 'execution',
    created_at: new Date(r.created_at).toISOString(),
    status: r.status,
    status_code: r.status_code,
    output: s.output ?? null,
    output_assets: s.output_assets ?? [],
    routing: {
      requested_provider: s.routing.requested_provider,
      requested_model: s.routing.requested_model,
      selected_provider: r.provider,
      selected_model: r.model,
      reason_code: s.routing.reason_code,
      fallback_occurred: s.routing.fallback_occurred,
    },
    governance: { decision: s.governance.decision, reason: s.governance.reason, actions: s.governance.actions ?? (JSON.parse(PROCEED_ACTIONS) as EnvelopeGovernance['actions']), constraints: null, budgets: null },
    usage,
    timing: { started_at: new Date(r.created_at).toISOString(), completed_at: new Date(r.completed_at).toISOString(), duration_ms: r.duration_ms },
    error: r.error_code !== null ? { code: r.error_code, message: s.error_message ?? '' } : null,
  };
  if (s.resolved) env.resolved = s.resolved;
  return env;
}
