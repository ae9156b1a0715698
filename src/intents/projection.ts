import { pricing } from '../pricing';
import { TOKENIZER_NAME } from '../pricing/tokenizer';

/** Per-call token assumptions when the caller declares none (documented in docs/decisions/intents.md). */
export const DEFAULT_INPUT_TOKENS_PER_CALL = 1000;
export const DEFAULT_OUTPUT_TOKENS_PER_CALL = 500;

export interface ProjectedCost {
  amount_micros: number;
  currency: 'USD';
  methodology: {
    basis: string;
    provenance: 'caller_declared_workflow';
    expected_calls: number;
    input_tokens_per_call_estimated: number;
    output_tokens_per_call_estimated: number;
    pricing_table_id: string;
    tokenizer: string;
    quality: 'caller_estimate' | 'partial_caller_estimate' | 'default_assumption';
    provider: string;
    model: string;
  };
}

export class ProjectionError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ProjectionInput {
  expected_calls?: number | null;
  max_calls?: number | null;
  expected_model?: string | null;
  expected_input_tokens_per_call?: number | null;
  expected_output_tokens_per_call?: number | null;
}

/**
 * Projected cost of a workflow: calls (expected_calls, else max_calls) × the per-call estimate of
 * the expected model (else the public default generate.text target), priced from the current
 * pricing table on the total token counts (one rounding, not one per call).
 */
export function projectCost(intent: ProjectionInput): ProjectedCost {
  const calls = intent.expected_calls ?? intent.max_calls ?? 0;
  const basisField = intent.expected_calls != null ? 'expected_calls' : 'max_calls';
  let target: { provider: string; model: string };
  if (intent.expected_model) {
    const resolved = pricing.resolveModel(intent.expected_model);
    if (resolved === 'ambiguous') {
      throw new ProjectionError('intent.expected_model', `Model "${intent.expected_model}" is ambiguous across providers; use a provider-specific id`);
    }
    if (!resolved) throw new ProjectionError('intent.expected_model', `Unknown model "${intent.expected_model}"`);
    target = resolved;
  } else {
    const def = pricing.defaultTarget('generate.text');
    if (!def) throw new ProjectionError('intent', 'No default generate.text target to project the cost with');
    target = def;
  }
  const inTok = intent.expected_input_tokens_per_call ?? DEFAULT_INPUT_TOKENS_PER_CALL;
  const outTok = intent.expected_output_tokens_per_call ?? DEFAULT_OUTPUT_TOKENS_PER_CALL;
  const input_tokens = calls * inTok;
  const output_tokens = calls * outTok;
  const cost = pricing.costMicros(target.provider as never, target.model, {
    input_tokens,
    output_tokens,
    total_tokens: input_tokens + output_tokens,
    metrics: [
      { meter: 'input_tokens', quantity: input_tokens, unit: 'tokens' },
      { meter: 'output_tokens', quantity: output_tokens, unit: 'tokens' },
    ],
    estimated: true,
  });
  if (cost === null) throw new ProjectionError('intent.expected_model', `Model "${target.model}" has no pricing; the cost cannot be projected`);
  const callerGiven = [intent.expected_model, intent.expected_input_tokens_per_call, intent.expected_output_tokens_per_call].filter((v) => v != null).length;
  return {
    amount_micros: Math.round(cost),
    currency: 'USD',
    methodology: {
      basis: `${basisField} × per-call estimate`,
      provenance: 'caller_declared_workflow',
      expected_calls: calls,
      input_tokens_per_call_estimated: inTok,
      output_tokens_per_call_estimated: outTok,
      pricing_table_id: pricing.pricingTableId,
      tokenizer: TOKENIZER_NAME,
      quality: callerGiven === 3 ? 'caller_estimate' : callerGiven === 0 ? 'default_assumption' : 'partial_caller_estimate',
      provider: target.provider,
      model: target.model,
    },
  };
}
