/**
 * Webhook subscriptions (GET, POST /v1/webhooks; GET, PATCH, DELETE /v1/webhooks/{id}; GET
 * .../deliveries; POST .../test) and the start of a message's delivery workflow. Koa-free.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Clock } from '../clock';
import type { Config } from '../config';
import { secretBox, SecretBoxUnavailableError } from '../crypto/secret-box';
import type { Db } from '../db/pool';
import type { EventRecord } from '../events/types';
import { findJobById } from '../db/repositories/jobs';
import {
  deleteSubscription,
  findSubscription,
  insertMessage,
  insertSubscription,
  listAttempts,
  listSubscriptions,
  updateSubscription,
  type WebhookAttemptRecord,
  type WebhookSubscriptionRecord,
} from '../db/repositories/webhooks';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import { jobView } from '../jobs/view';
import type { Logger } from '../logger';
import { TEST_EVENT_TYPE } from './events';
import { newWebhookSecret } from './signing';
import { allowList, checkedAddresses, SsrfRefusedError, type Resolver } from './ssrf';
import { webhookDeliveryWorkflowId, type WebhookDeliveryInput } from '../../workflows/webhook-messages';

export interface WebhookServiceDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'env' | 'masterKey' | 'databaseUrl' | 'webhooks'>;
  temporal: { client: Client; taskQueue: string };
  resolve?: Resolver;
}

/** The purpose a subscription's secret is sealed for (bound to its id). */
export const secretPurpose = (subscriptionId: string) => `webhook_secret:${subscriptionId}`;

export function subscriptionView(s: WebhookSubscriptionRecord) {
  return {
    id: s.id,
    object: 'webhook_subscription' as const,
    url: s.url,
    description: s.description,
    event_types: s.event_types,
    enabled: s.enabled,
    disabled_reason: s.disabled_reason,
    created_at: new Date(s.created_at).toISOString(),
    updated_at: new Date(s.updated_at).toISOString(),
  };
}

export function deliveryView(a: WebhookAttemptRecord) {
  return {
    id: a.id,
    object: 'webhook_delivery' as const,
    webhook_id: a.message_id,
    event_type: a.event_type ?? null,
    attempt: a.attempt,
    attempted_at: new Date(a.attempted_at).toISOString(),
    status_code: a.status_code,
    latency_ms: a.latency_ms,
    succeeded: a.ok,
    error: a.error,
    response_body: a.response_body,
  };
}

/**
 * Refuses a URL Tollgate must not call: not http(s), credentials in it, https required in
 * production (unless allow-listed), or a host resolving to an internal address (SSRF guard).
 */
export async function validateWebhookUrl(deps: Pick<WebhookServiceDeps, 'config' | 'resolve'>, raw: string): Promise<string> {
  const bad = (message: string, code = 'invalid_webhook_url') => errors.validation([{ path: 'url', message, code }]);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad('url must be an absolute http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad('url must use https (or http)');
  if (url.username || url.password) throw bad('url must not carry credentials');
  const allow = allowList(deps.config.webhooks.allowedHosts);
  if (deps.config.env === 'production' && url.protocol === 'http:' && !allow.hostAllowed(url.hostname)) throw bad('url must use https');
  try {
    await checkedAddresses(url.hostname, allow, deps.resolve);
  } catch (err) {
    if (err instanceof SsrfRefusedError) {
      throw new ApiError(400, 'webhook_url_refused', `Webhook URL refused: ${err.message}`, { details: { url: raw, host: err.host, address: err.address } });
    }
    throw err;
  }
  return url.toString();
}

async function box(deps: WebhookServiceDeps) {
  try {
    return await secretBox(deps.db, deps.config);
  } catch (err) {
    if (err instanceof SecretBoxUnavailableError) throw new ApiError(503, 'webhooks_unavailable', err.message);
    throw err;
  }
}

export async function createSubscription(
  deps: WebhookServiceDeps,
  projectId: string,
  body: { url: string; event_types: string[]; description?: string | null; enabled?: boolean },
) {
  const url = await validateWebhookUrl(deps, body.url);
  const id = newId('whsub');
  const secret = newWebhookSecret();
  const sealed = (await box(deps)).seal(secret, secretPurpose(id));
  const row = await insertSubscription(deps.db, {
    id,
    projectId,
    url,
    description: body.description ?? null,
    eventTypes: [...new Set(body.event_types)],
    enabled: body.enabled ?? true,
    secretEncrypted: sealed,
  });
  // The secret is shown here once; it is stored encrypted and never returned again.
  return { ...subscriptionView(row), secret };
}

export async function readSubscription(deps: Pick<WebhookServiceDeps, 'db'>, projectId: string, id: string) {
  const s = await findSubscription(deps.db, projectId, id);
  if (!s) throw errors.notFound('Webhook subscription', id);
  return subscriptionView(s);
}

export async function listSubscriptionsPage(deps: Pick<WebhookServiceDeps, 'db'>, projectId: string, q: { afterId?: string; limit: number }) {
  const rows = await listSubscriptions(deps.db, projectId, { afterId: q.afterId, limit: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  return { data: page.map(subscriptionView), nextAfter: rows.length > q.limit ? page[page.length - 1].id : null };
}

export async function patchSubscription(
  deps: WebhookServiceDeps,
  projectId: string,
  id: string,
  patch: { url?: string; event_types?: string[]; description?: string | null; enabled?: boolean },
) {
  const url = patch.url !== undefined ? await validateWebhookUrl(deps, patch.url) : undefined;
  const row = await updateSubscription(deps.db, projectId, id, {
    url,
    description: patch.description,
    eventTypes: patch.event_types ? [...new Set(patch.event_types)] : undefined,
    enabled: patch.enabled,
  });
  if (!row) throw errors.notFound('Webhook subscription', id);
  return subscriptionView(row);
}

export async function removeSubscription(deps: Pick<WebhookServiceDeps, 'db'>, projectId: string, id: string): Promise<void> {
  if (!(await deleteSubscription(deps.db, projectId, id))) throw errors.notFound('Webhook subscription', id);
}

export async function listDeliveries(deps: Pick<WebhookServiceDeps, 'db'>, projectId: string, id: string, q: { before?: { at: string; id: string }; limit: number }) {
  if (!(await findSubscription(deps.db, projectId, id))) throw errors.notFound('Webhook subscription', id);
  const rows = await listAttempts(deps.db, projectId, id, { before: q.before, limit: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return { data: page.map(deliveryView), next: rows.length > q.limit && last ? { at: last.cursor_ts, id: last.id } : null };
}

/** A message's webhook-id: stable per (subscription, source event, type), so every retry and every re-scan sends the same one. */
export function messageId(subscriptionId: string, eventId: string, type: string): string {
  return 'msg_' + createHash('sha256').update(`${subscriptionId}\n${eventId}\n${type}`).digest('hex').slice(0, 32);
}

/** The Standard Webhooks payload of a timeline event: `{type, timestamp, data}`. */
export async function payloadOf(db: Db, e: EventRecord, type: string): Promise<Record<string, unknown>> {
  const timestamp = new Date(e.timestamp).toISOString();
  if (e.job_id && type.startsWith('job.')) {
    const job = await findJobById(db, e.job_id);
    if (job) return { type, timestamp, data: jobView(job) };
  }
  return {
    type,
    timestamp,
    data: {
      event_id: e.id,
      event_type: e.event_type,
      request_id: e.request_id,
      permit_id: e.permit_id,
      job_id: e.job_id,
      provider: e.provider,
      model: e.model,
      metadata: e.metadata ?? {},
    },
  };
}

/** Starts a message's delivery workflow; a message already started (or done) is left alone. */
export async function startDelivery(temporal: { client: Client; taskQueue: string }, config: Pick<Config, 'webhooks'>, id: string): Promise<void> {
  const input: WebhookDeliveryInput = { messageId: id, scheduleMs: config.webhooks.retryScheduleMs };
  try {
    await temporal.client.workflow.start('webhookDeliveryWorkflow', {
      workflowId: webhookDeliveryWorkflowId(id),
      taskQueue: temporal.taskQueue,
      args: [input],
      // A delivered (or stopped) message is never started again; a failed run (its message was never
      // committed) may be.
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}

/** POST /v1/webhooks/{id}/test: a signed `webhook.test` message through the normal delivery path. */
export async function sendTestEvent(deps: WebhookServiceDeps, projectId: string, id: string) {
  const sub = await findSubscription(deps.db, projectId, id);
  if (!sub) throw errors.notFound('Webhook subscription', id);
  const msgId = 'msg_' + newId('test').slice('test_'.length);
  const now = deps.clock.now().toISOString();
  await insertMessage(deps.db, {
    id: msgId,
    projectId,
    subscriptionId: id,
    eventId: msgId,
    eventType: TEST_EVENT_TYPE,
    requestId: null,
    jobId: null,
    permitId: null,
    payload: { type: TEST_EVENT_TYPE, timestamp: now, data: { subscription_id: id, message: 'Test event from Tollgate' } },
  });
  await startDelivery(deps.temporal, deps.config, msgId);
  return msgId;
}
