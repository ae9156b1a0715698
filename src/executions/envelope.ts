/**
 * The execution envelope (spec "Execution envelope"), returned by both execution routes. Exactly the
 * spec's fields; `usage.metrics` only on /v1/executions, `resolved` only on /v1/execute.
 */
import type { ExecutionOutput, OutputAsset, Usage, UsageMetric } from '../providers/types';

export type ExecutionStatus = 'completed' | 'failed' | 'denied';
export type ExecutionRoute = 'executions' | 'execute' | 'proxy';

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

