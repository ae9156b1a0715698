import type { Clock } from '../src/clock';
import type { Config } from '../src/config';
import type { Db } from '../src/db/pool';
import type { Logger } from '../src/logger';
import type { StreamRelay } from '../src/executions/stream-relay';
import type { Governance } from '../src/governance';
import type { PricingCatalog } from '../src/pricing/types';
import type { ProviderGateway } from '../src/providers/types';

/** What activity factories receive; tests hand in real or fake parts. */
export interface ActivityDeps {
  db: Db;
  config: Config;
  clock: Clock;
  logger: Logger;
  /** Governed executions (activities/executions.ts); optional so tests can build other activities without them. */
  providers?: ProviderGateway;
  pricing?: PricingCatalog;
  governance?: Governance;
  relay?: StreamRelay;
}
