import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Worker } from '@temporalio/worker';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { createApp } from './api/app';
import { answerClientErrors, httpServerOptions } from './api/middleware/http-limits';
import { Clock, systemClock } from './clock';
import { Config } from './config';
import { createPool, Db } from './db/pool';
import { createLogger, Logger } from './logger';
import { connectTemporal, TemporalHandles } from './temporal/connection';
import { createActivities } from '../activities';
import { createActivityWorker, createWorker, ensureMaintenanceWorkflows } from './temporal/worker';
import { installTemporalRuntime } from './temporal/runtime';
import { createIntentReservations, type IntentReservations } from './intents/reservations';
import { startSequencer } from './events/sequencer';
import { startWebhookFanout, type WebhookFanout } from './webhooks/fanout';
import { webhookTaskQueue } from '../workflows/webhook-messages';
import { createKeyCache } from './api/key-cache';
import { AUTH_CHANGES_CHANNEL, openNoticeChannel } from './db/notice-listener';
import { createGovernedCallActivities } from '../activities/governed-call';
import { createGenAiMetrics } from './telemetry/gen-ai';
import { createGovernance } from './governance';
import { pricing } from './pricing';
import { warmTokenizer } from './pricing/tokenizer';
import { warmFirewall } from './governance/firewall';
import { createProviderGateway } from './providers';
import { createProjectProviderKeys, withProjectProviderKeys } from './management/provider-credentials';
import { createPermitService } from './permits/service';

/** How long a closing API waits for in-flight requests before it drops their connections. */
const SHUTDOWN_GRACE_MS = 5000;

export interface Tollgate {
  /** Base URL of the API, when this process serves it. */
  url: string | null;
  db: Db;
  temporal: TemporalHandles;
  worker: Worker | null;
  logger: Logger;
  /** This API process's call leases on intents (null in a worker-only process). */
  intentReservations: IntentReservations | null;
  close(): Promise<void>;
}

export interface StartOptions {
  config: Config;
  clock?: Clock;
  logger?: Logger;
  /** Wait this long for the Temporal frontend to come up (the dev runner starts them together). */
  temporalRetryMs?: number;
  /** Start the singleton maintenance workflows (off in tests, which use throwaway task queues). */
  startMaintenance?: boolean;
}

/**
 * One Tollgate process: the Koa API, a Temporal worker, or both over one NativeConnection
 * (`config.role`). Every process is stateless; PostgreSQL and Temporal hold the state.
 */
export async function startTollgate(opts: StartOptions): Promise<Tollgate> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel, { role: config.role });
  installTemporalRuntime(logger);
  const db = createPool(config.databaseUrl, config.databasePoolMax);
  const temporalRetryMs = opts.temporalRetryMs ?? 0;
  const temporal = await connectTemporal({
    address: config.temporal.address,
    namespace: config.temporal.namespace,
    retryForMs: temporalRetryMs,
    // Said at the first failure and every ~10 s after, so a process waiting for Temporal is not silent.
    onRetry: (err, attempt) => {
      if (attempt === 1 || attempt % 20 === 0) {
        logger.warn({ address: config.temporal.address, attempt, err: err instanceof Error ? err.message : String(err) }, `Temporal is not reachable yet; retrying for up to ${Math.round(temporalRetryMs / 1000)} s from start`);
      }
    },
  });

  // One governance engine and one provider gateway per process, shared by the API's in-process
  // pipeline and the worker's activities.
  const governance = createGovernance({ db, clock });
  // A project's own provider key when it set one (cached per process, no per-call round trip).
  // One listening connection for every cache that follows key, plan and provider key changes.
  const authChanges = openNoticeChannel({
    databaseUrl: config.databaseUrl,
    channel: AUTH_CHANGES_CHANNEL,
    logger,
    lostMessage: 'auth change listener lost; keys are read from the database until it is back',
  });
  const projectProviderKeys = createProjectProviderKeys({ db, logger, config, authChanges });
  const providers = withProjectProviderKeys(createProviderGateway(config), projectProviderKeys);
  // GET /metrics serves this registry; the governed calls observe the GenAI client metrics into it.
  const metrics = new Registry();
  const genAi = createGenAiMetrics(metrics);
  const calls = createGovernedCallActivities({ db, clock, logger, governance, pricing, providers, recordCommit: config.recordCommit, genAi });

  let worker: Worker | null = null;
  let workerRun: Promise<void> | null = null;
  let webhookWorker: Worker | null = null;
  let webhookWorkerRun: Promise<void> | null = null;
  if (config.role !== 'api') {
    const activities = createActivities({ db, config, clock, logger, providers, pricing, governance });
    worker = await createWorker({
      connection: temporal.connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      activities,
      workflowBundlePath: config.temporal.workflowBundlePath,
    });
    workerRun = worker.run().catch((err) => {
      logger.fatal({ err }, 'temporal worker stopped with an error');
      throw err;
    });
    // Webhook delivery attempts on their own task queue (workflows/webhook-messages.ts).
    webhookWorker = await createActivityWorker({
      connection: temporal.connection,
      namespace: config.temporal.namespace,
      taskQueue: webhookTaskQueue(config.temporal.taskQueue),
      activities,
    });
    webhookWorkerRun = webhookWorker.run().catch((err) => {
      logger.fatal({ err }, 'temporal webhook worker stopped with an error');
      throw err;
    });
    if (opts.startMaintenance ?? true) await ensureMaintenanceWorkflows(temporal.client, config.temporal.taskQueue);
  }

  // Chains the hash chain of events the request path inserted unchained (src/events/sequencer.ts).
  const sequencer = startSequencer({ db, logger });
  // Turns chained events into webhook deliveries (worker processes; src/webhooks/fanout.ts).
  let fanout: WebhookFanout | null = null;
  if (config.role !== 'api' && config.webhooks.fanout) {
    fanout = startWebhookFanout({ db, logger, config, temporal: { client: temporal.client, taskQueue: config.temporal.taskQueue } });
  }

  let server: http.Server | null = null;
  let url: string | null = null;
  const closers: Array<() => Promise<void>> = [];
  // Returned before the worker stops (a release is an Update this process's worker may handle).
  let intentReservations: ReturnType<typeof createIntentReservations> | null = null;
  if (config.role !== 'worker') {
    intentReservations = createIntentReservations({ client: temporal.client, db, logger, databaseUrl: config.databaseUrl, idleMs: config.intentLeaseIdleMs });
    const keys = createKeyCache({ db, authChanges });
    closers.push(() => keys.close());
    collectDefaultMetrics({ register: metrics });
    const app = createApp({
      config,
      db,
      logger,
      clock,
      metrics,
      genAi,
      temporal: { client: temporal.client, connection: temporal.connection, taskQueue: config.temporal.taskQueue },
      intentReservations,
      keys,
      projectProviderKeys,
      pricing,
      governance,
      permits: createPermitService({ db, clock, governance, intentReservations }),
      providers,
      calls,
      onClose: (fn) => closers.push(fn),
    });
    const handler = app.callback();
    warmTokenizer();
    warmFirewall();
    server = http.createServer(httpServerOptions(), (req, res) => void handler(req, res));
    answerClientErrors(server);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(config.port, config.host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    url = `http://${host}:${address.port}`;
  }

  let closed = false;
  return {
    url,
    db,
    temporal,
    worker,
    logger,
    intentReservations,
    async close() {
      if (closed) return;
      closed = true;
      if (server) {
        // Stop accepting, close idle keep-alive sockets, give in-flight requests a grace period,
        // then drop what is left (a peer that never closes its socket must not hold the process).
        const closing = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        await closing;
        clearTimeout(force);
      }
      // Unused leased calls go back to their intents.
      await intentReservations?.close().catch(() => undefined);
      if (worker && workerRun) {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        if (webhookWorker?.getState() === 'RUNNING') webhookWorker.shutdown();
        await workerRun.catch(() => undefined);
        await webhookWorkerRun?.catch(() => undefined);
      }
      for (const fn of closers) await fn().catch(() => undefined);
      await fanout?.close().catch(() => undefined);
      await sequencer.close().catch(() => undefined);
      await providers.close().catch(() => undefined);
      await projectProviderKeys.close().catch(() => undefined);
      await authChanges.close().catch(() => undefined);
      await temporal.connection.close().catch(() => undefined);
      await db.end().catch(() => undefined);
    },
  };
}
