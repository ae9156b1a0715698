/**
 * The tools an execution offers the model: /v1/executions and /v1/execute carry them in each
 * target's provider options (`provider_options.<provider>.tools`, native-shaped), where the
 * provider sees them. Governance gets their names (a policy's `match.tool`, the permit's `tools`)
 * and the firewall their definitions' texts, masked like the messages on a `redact` action.
 */
import type { InspectableText } from '../governance/firewall/roles';
import type { Redactor } from '../governance/firewall/redact';
import { providerModules } from '../providers';
import { toolDefinitionItems, toolDefinitions } from '../providers/shared/tool-definitions';
import type { NormalizedRequest } from '../providers/types';
import type { ExecutionInput } from './types';

type Request = ExecutionInput['request'];

/** The names of the tools the primary target is offered (its provider options, read as its native body). */
export function executionTools(primary: NormalizedRequest): string[] {
  return primary.providerOptions ? providerModules[primary.provider].requestTools(primary.providerOptions) : [];
}

/** The texts of the tool definitions every target may be sent (any target's provider options). */
export function toolDefinitionTexts(request: Request): InspectableText[] {
  return Object.values(request.providerOptions ?? {}).flatMap((o) => toolDefinitionItems(toolDefinitions(o)));
}

/** The request with the tool definitions of every target's provider options masked (a copy; other options as they are). */
export function maskToolDefinitions(r: Redactor, request: Request): Request {
  if (!request.providerOptions) return request;
  const providerOptions: Request['providerOptions'] = {};
  for (const [provider, o] of Object.entries(request.providerOptions) as [keyof NonNullable<Request['providerOptions']>, Record<string, unknown> | undefined][]) {
    if (!o) continue;
    const masked = { ...o };
    for (const k of ['tools', 'functions']) if (Array.isArray(o[k])) masked[k] = r.json(o[k]);
    providerOptions[provider] = masked;
  }
  return { ...request, providerOptions };
}
