/** Whether a request matches a policy rule's `match` or the model allow-list: globs over its provider, model, operation, route, tools and metadata. */
import type { GovernanceRequest } from './types';
import type { MatchSpec } from './policy';

function valueMatches(pattern: string | string[] | undefined, value: string | null | undefined): boolean {
  if (pattern === undefined) return true;
  if (value === null || value === undefined) return false;
  const list = Array.isArray(pattern) ? pattern : [pattern];
  return list.some((p) => globMatch(p, value));
}

// Compiled glob patterns: policies are evaluated on every call, and compiling a RegExp per rule and
// call showed in the request path's profile. Bounded: patterns come from stored policies.
const globs = new Map<string, RegExp>();

export function globMatch(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  let rx = globs.get(pattern);
  if (!rx) {
    if (globs.size >= 1_000) globs.clear();
    rx = new RegExp('^' + pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$');
    globs.set(pattern, rx);
  }
  return rx.test(value);
}

export function ruleMatches(match: MatchSpec, req: GovernanceRequest): boolean {
  if (!valueMatches(match.provider, req.provider)) return false;
  if (!valueMatches(match.model, req.model)) return false;
  if (!valueMatches(match.operation, req.operation)) return false;
  if (!valueMatches(match.route, req.route)) return false;
  if (match.tool !== undefined && !(req.tools ?? []).some((t) => valueMatches(match.tool, t))) return false;
  if (match.metadata) {
    for (const [k, v] of Object.entries(match.metadata)) {
      if (!valueMatches(v, req.metadata?.[k])) return false;
    }
  }
  return true;
}

export function modelAllowed(list: string[] | null, req: GovernanceRequest): boolean {
  if (list === null) return true;
  return list.some((entry) => (entry.includes('/') ? globMatch(entry, `${req.provider}/${req.model}`) : globMatch(entry, req.model)));
}
