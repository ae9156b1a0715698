import type { Clock } from '../src/clock';
import type { Config } from '../src/config';
import type { Db } from '../src/db/pool';
import type { Logger } from '../src/logger';
import type { Governance } from '../src/governance';
import type { PricingCatalog } from '../src/pricing/types';
import type { ProviderGateway } from '../src/providers/types';

/** What activity factories receive; tests hand in real or fake parts. */
export interface ActivityDeps {
  db: Db;
  config: Config;
  clock: Clock;
  logger: Logger;
  providers: ProviderGateway;
  pricing: PricingCatalog;
  governance: Governance;
}
