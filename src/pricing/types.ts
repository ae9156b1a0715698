/**
 * The pricing contract the governance and execution code depends on. src/pricing/ implements it
 * with a versioned table; costs are integer micro-USD.
 */
import type { Operation, ProviderId, NormalizedRequest, Usage } from '../providers/types';

export interface ResolvedModel {
  provider: ProviderId;
  model: string;
  /** The alias the caller used, when it was one. */
  alias: string | null;
}

export interface CostEstimate {
  input_tokens: number;
  output_tokens: number;
  /** Null when the model has no pricing (governance: budget.pricing_unavailable). */
  cost_micros: number | null;
  tokenizer: string;
}

export interface PricingCatalog {
  readonly pricingTableId: string;
  /** Public default target for an operation; with `provider`, that provider's default model. */
  defaultTarget(operation: Operation, provider?: ProviderId): { provider: ProviderId; model: string } | null;
  /** Resolves a model id or alias (optionally within one provider); null when unknown or ambiguous. */
  resolveModel(modelOrAlias: string, provider?: ProviderId): ResolvedModel | null | 'ambiguous';
  /** Actual cost of a finished call; null when the model has no pricing. */
  costMicros(provider: ProviderId, model: string, usage: Usage): number | null;
  /** Pre-dispatch estimate from the request text (tokenizer) and max_output_tokens. */
  estimate(req: NormalizedRequest): CostEstimate;
}
