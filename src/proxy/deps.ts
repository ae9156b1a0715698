/** What every part of the proxies shares: their dependencies and the names of what they serve. */
import type { Clock } from '../clock';
import type { Config, ProviderId } from '../config';
import type { Logger } from '../logger';
import type { PipelineDeps } from '../pipeline/governed-call';
import type { ProviderGateway } from '../providers/types';
import type { GenAiMetrics } from '../telemetry/gen-ai';
import type { UpstreamClient } from './upstream';

/** What governance did to an allowed call (e.g. lowered its output ceiling): its `governance.actions` other than `proceed`, as JSON. */
export const GOVERNANCE_ACTIONS_HEADER = 'x-svc-governance-actions';

/** What the prompt firewall let through on an allowed call: `redacted=<categories>; flagged=<categories>` (categories only). */
export const FIREWALL_HEADER = 'x-svc-firewall';

export const PROXY_PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic', 'google', 'deepseek', 'mistral'];
/** Providers whose proxies accept the routing headers (spec: routing controls on <provider_1>, <provider_2>). */
export const ROUTABLE_PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic'];

/** What the proxies take from the process: the pipeline's dependencies and the proxies' own. */
export interface ProxyDeps extends PipelineDeps {
  config: Pick<Config, 'providers' | 'providerTimeouts' | 'idempotencyRetentionHours' | 'bodyLimitBytes'>;
  logger: Logger;
  clock: Clock;
  /** Observed per provider attempt, pass-through and translated alike. */
  genAi: GenAiMetrics;
  /** Translated attempts (a cross-provider target) go through the provider adapters. */
  providers: Pick<ProviderGateway, 'dispatch'>;
  /** Pass-through connection pools (native bytes to the provider). */
  upstream: UpstreamClient;
}
