import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Registry } from 'prom-client';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import type { Logger } from '../logger';
import type { IntentReservations } from '../temporal/intent-reservations';
import type { StreamRelay } from '../executions/stream-relay';
import type { PricingCatalog } from '../pricing/types';

/** What route modules receive. The API holds no business state of its own. */
export interface ApiDeps {
  config: Config;
  db: Db;
  logger: Logger;
  clock: Clock;
  metrics: Registry;
  temporal: { client: Client; connection: NativeConnection; taskQueue: string };
  /** Coalesced call reservations against workflow intents (X-Svc-Workflow-Id). */
  intentReservations: IntentReservations;
  /** Governed executions: routing defaults and the stream relay (src/executions). */
  pricing?: PricingCatalog;
  relay?: StreamRelay;
  /** Registers cleanup (connection pools built lazily by a route) to run when the process closes. */
  onClose?: (fn: () => Promise<void>) => void;
}
