/**
 * Target selection for POST /v1/executions (spec "routing object"): an explicit target; one side
 * given and the public default filled in for the other; neither → the operation's public default.
 * Fallback is explicit and request-scoped only. Every failure here is a 400 before any dispatch.
 */
import type { ProviderId } from '../config';
import type { PricingCatalog } from '../pricing/types';
import { Operation, supportsOperation } from '../providers/types';
import { errors } from '../errors';
import { ExecutionRequest, FALLBACK_PROVIDERS } from './schema';
import type { ExecutionInput, RoutingPlan, RoutingReason, Target } from './types';

export class RoutingError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = 'RoutingError';
  }
}

function resolveWithin(pricing: PricingCatalog, model: string, provider: ProviderId): string {
  const r = pricing.resolveModel(model, provider);
  return r && r !== 'ambiguous' && r.provider === provider ? r.model : model;
}

export function planRouting(req: Pick<ExecutionRequest, 'operation' | 'routing' | 'mode'>, pricing: PricingCatalog): RoutingPlan {
  const op: Operation = req.operation;
  const rp = req.routing?.provider ?? null;
  const rm = req.routing?.model ?? null;
  let primary: Target;
  let reason: RoutingReason;
  if (rp && rm) {
    primary = { provider: rp, model: resolveWithin(pricing, rm, rp) };
    reason = 'explicit_request';
  } else if (rp) {
    if (!supportsOperation(rp, op)) throw new RoutingError('routing.provider', `Provider ${rp} does not support ${op} on this route`);
    const t = pricing.defaultTarget(op, rp);
    if (!t) throw new RoutingError('routing.provider', `No public default model for ${op} on ${rp}; set routing.model`);
    primary = t;
    reason = 'default_model_for_provider';
  } else if (rm) {
    const r = pricing.resolveModel(rm);
    if (r === 'ambiguous') throw new RoutingError('routing.model', `Model "${rm}" is offered by several providers; set routing.provider`);
    if (!r) throw new RoutingError('routing.model', `Unknown model "${rm}"; set routing.provider to target it explicitly`);
    primary = { provider: r.provider, model: r.model };
    reason = 'provider_inferred_from_model';
  } else {
    const t = pricing.defaultTarget(op);
    if (!t) throw new RoutingError('operation', `No public default target for ${op}`);
    primary = t;
    reason = 'operation_default';
  }
  if (!supportsOperation(primary.provider, op)) {
    throw new RoutingError(rp ? 'routing.provider' : 'routing.model', `Provider ${primary.provider} does not support ${op} on this route`);
  }
  let fallback: Target[] = [];
  if (req.routing?.allow_cross_provider_fallback === true && req.routing.fallback_chain?.length) {
    if (!FALLBACK_PROVIDERS.includes(primary.provider)) {
      throw new RoutingError('routing.fallback_chain', `Cross-provider fallback is limited to ${FALLBACK_PROVIDERS.join(' and ')} primaries; the primary is ${primary.provider}`);
    }
    fallback = req.routing.fallback_chain
      .map((t) => ({ provider: t.provider, model: resolveWithin(pricing, t.model, t.provider) }))
      .filter((t) => !(t.provider === primary.provider && t.model === primary.model));
  }
  return { requested_provider: rp, requested_model: rm, primary, fallback, reason_code: reason };
}

/**
 * The provider-neutral request and the routing of an execution body (`POST /v1/executions`, and
 * `POST /v1/jobs` for later): a routing the catalogue cannot satisfy is a 400 `invalid_routing`.
 */
export function planExecution(body: ExecutionRequest, pricing: PricingCatalog): Pick<ExecutionInput, 'request' | 'routing'> {
  let plan: RoutingPlan;
  try {
    plan = planRouting(body, pricing);
  } catch (err) {
    if (err instanceof RoutingError) throw errors.validation([{ path: err.path, message: err.message, code: 'invalid_routing' }]);
    throw err;
  }
  return {
    request: {
      operation: body.operation,
      ...(body.messages ? { messages: body.messages } : {}),
      ...(body.inputs ? { inputs: body.inputs } : {}),
      ...(body.parameters ? { parameters: body.parameters } : {}),
      ...(body.provider_options ? { providerOptions: body.provider_options } : {}),
    },
    routing: {
      requested_provider: plan.requested_provider,
      requested_model: plan.requested_model,
      reason_code: plan.reason_code,
      primary: plan.primary,
      fallback: plan.fallback,
    },
  };
}
