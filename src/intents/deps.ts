/** What the intent operations (declare.ts, lifecycle.ts, read.ts) are given. */
import type { Client } from '@temporalio/client';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import type { Logger } from '../logger';

export interface IntentServiceDeps {
  db: Db;
  config: Config;
  clock: Clock;
  logger: Logger;
  temporal: { client: Client; taskQueue: string };
}
