/**
 * Workflow intents (routes in src/api/routes/workflows.ts): declare.ts (declaration, projection,
 * signing, workflow start), lifecycle.ts (amend, complete), read.ts (the stored record with live
 * state). The intentWorkflow (workflows/intent.ts) owns the counters while an intent is active.
 */
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


export * from './declare';
export * from './lifecycle';
export * from './read';
