/**
 * The webhook fan-out: every `intervalMs`, for each project with an enabled subscription, reads
 * the chained timeline events after the project's cursor (chain order is commit order, so an event
 * that commits late is not skipped), turns those a subscription wants into messages (one per
 * subscription, event and type; the id is derived from them, so a re-scan after a crash makes the
 * same message) under the project's try-lock, commits them, starts each message's delivery
 * workflow, then moves the cursor. Runs in worker processes (WEBHOOK_FANOUT=on).
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import { advanceWebhookCursor, enabledSubscriptions, fanOutProjectEvents, insertMessage, projectsWithSubscriptions } from '../db/repositories/webhooks';
import type { Logger } from '../logger';
import { startPeriodicRound } from '../events/periodic';
import { SOURCE_EVENT_TYPES, webhookTypesOf } from './events';
import { messageId, payloadOf, startDelivery } from './service';

const BATCH = 1000;
const START_CONCURRENCY = 32;

export interface WebhookFanout {
  runOnce(): Promise<number>;
  close(): Promise<void>;
}

export function startWebhookFanout(deps: {
  db: Db;
  logger: Logger;
  config: Pick<Config, 'webhooks'>;
  temporal: { client: Client; taskQueue: string };
  intervalMs?: number;
}): WebhookFanout {
  const intervalMs = deps.intervalMs ?? 250;

  async function project(projectId: string): Promise<number> {
    const ids: string[] = [];
    const range = await fanOutProjectEvents(deps.db, projectId, { types: SOURCE_EVENT_TYPES, batch: BATCH }, async (c, events) => {
      const subs = await enabledSubscriptions(c, projectId);
      for (const e of events) {
        const types = webhookTypesOf(e);
        for (const s of subs) {
          if (new Date(s.created_at) > new Date(e.timestamp)) continue;
          for (const type of types) {
            if (!s.event_types.includes(type)) continue;
            const id = messageId(s.id, e.id, type);
            await insertMessage(c, {
              id,
              projectId,
              subscriptionId: s.id,
              eventId: e.id,
              eventType: type,
              requestId: e.request_id,
              jobId: e.job_id,
              permitId: e.permit_id,
              payload: await payloadOf(deps.db, e, type),
            });
            ids.push(id);
          }
        }
      }
    });
    if (!range) return 0; // another process holds the project
    // The messages are committed; their deliveries start before the cursor moves, so a crash in
    // between re-scans and re-starts them (same ids: nothing is sent twice).
    for (let i = 0; i < ids.length; i += START_CONCURRENCY) {
      await Promise.all(ids.slice(i, i + START_CONCURRENCY).map((id) => startDelivery(deps.temporal, deps.config, id)));
    }
    if (range.to > range.from) await advanceWebhookCursor(deps.db, projectId, range.to);
    return range.to - range.from;
  }

  async function round(): Promise<number> {
    let total = 0;
    for (const projectId of await projectsWithSubscriptions(deps.db)) {
      for (;;) {
        const n = await project(projectId);
        total += n;
        if (n < BATCH) break;
      }
    }
    return total;
  }

  return startPeriodicRound(round, { intervalMs, logger: deps.logger, failureMessage: 'webhook fan-out round failed; retried next round' });
}
