import type { Clock } from '../src/clock';
import type { Config } from '../src/config';
import type { Db } from '../src/db/pool';
import type { Logger } from '../src/logger';

/** What activity factories receive; tests hand in real or fake parts. */
export interface ActivityDeps {
  db: Db;
  config: Config;
  clock: Clock;
  logger: Logger;
}
