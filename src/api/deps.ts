import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Registry } from 'prom-client';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import type { Logger } from '../logger';
import type { IntentReservations } from '../intents/reservations';
import type { GovernedCallActivities } from '../../activities/governed-call';
import type { Governance } from '../governance';
import type { ProviderGatewayWithClose } from '../providers';
import type { PricingCatalog } from '../pricing/types';
import type { KeyLookup } from './key-cache';
import type { PermitService } from '../permits/service';
import type { GenAiMetrics } from '../telemetry/gen-ai';

/** What route modules receive. The API holds no business state of its own. */
export interface ApiDeps {
  config: Config;
  db: Db;
  logger: Logger;
  clock: Clock;
  metrics: Registry;
  /** The GenAI client metrics in `metrics`, observed per provider attempt (the proxies' own attempts too). */
  genAi: GenAiMetrics;
  temporal: { client: Client; connection: NativeConnection; taskQueue: string };
  /** Coalesced call reservations against intents (X-Svc-Workflow-Id). */
  intentReservations: IntentReservations;
  /** API key lookups (cached per process, invalidated by PostgreSQL notices: src/api/key-cache.ts). */
  keys: KeyLookup;
  pricing: PricingCatalog;
  /** The permit-first API's actions and read models (src/permits/service.ts). */
  permits: PermitService;
  /** The one governance engine of this process (its plan/policy cache is shared by every route). */
  governance: Governance;
  /** Provider adapters over one connection pool per provider. */
  providers: ProviderGatewayWithClose;
  /** The governed-call pipeline's steps, run in process (activities/governed-call.ts). */
  calls: GovernedCallActivities;
  /** Projects' own provider keys cached for dispatch (src/management/provider-credentials.ts); routes that change one drop it here at once. */
  projectProviderKeys: { invalidate(projectId: string): void };
  /** Registers cleanup (connection pools built lazily by a route) to run when the process closes. */
  onClose: (fn: () => Promise<void>) => void;
}

/** What the Temporal-backed services (intents, jobs, webhooks, sessions) take from the API's dependencies. */
export function temporalServiceDeps(deps: ApiDeps) {
  return {
    db: deps.db,
    config: deps.config,
    clock: deps.clock,
    logger: deps.logger,
    temporal: { client: deps.temporal.client, taskQueue: deps.temporal.taskQueue },
  };
}
