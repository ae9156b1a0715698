/** What every part of the proxies shares: their dependencies and the names of what they serve. */
import type { ApiDeps } from '../api/deps';
import type { ProviderId } from '../config';
import type { UpstreamClient } from './upstream';

/** What governance did to an allowed call (e.g. lowered its output ceiling): its `governance.actions` other than `proceed`, as JSON. */
export const GOVERNANCE_ACTIONS_HEADER = 'x-svc-governance-actions';

/** What the prompt firewall let through on an allowed call: `redacted=<categories>; flagged=<categories>` (categories only). */
export const FIREWALL_HEADER = 'x-svc-firewall';

export const PROXY_PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic', 'google', 'deepseek', 'mistral'];
/** Providers whose proxies accept the routing headers (spec: routing controls on <provider_1>, <provider_2>). */
export const ROUTABLE_PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic'];

export interface ProxyDeps {
  api: ApiDeps;
  /** Pass-through connection pools (native bytes to the provider). */
  upstream: UpstreamClient;
}
