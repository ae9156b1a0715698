/**
 * The webhook delivery attempt (workflows/webhook-delivery.ts): loads the message and its
 * subscription, opens the secret, signs at send time (Standard Webhooks), sends through the SSRF
 * guard, and records the attempt with its timeline events. A 410 disables the subscription.
 */
import { secretBox } from '../src/crypto/secret-box';
import type { NewEvent } from '../src/events/types';
import { disableSubscription, findMessage, findSubscriptionById, recordAttempt, setMessageStatus, type WebhookMessageRecord } from '../src/db/repositories/webhooks';
import { newId } from '../src/ids';
import { TEST_EVENT_TYPE } from '../src/webhooks/events';
import { sendWebhook } from '../src/webhooks/send';
import { secretPurpose } from '../src/webhooks/service';
import { signedHeaders } from '../src/webhooks/signing';
import { allowList, type Resolver } from '../src/webhooks/ssrf';
import type { ActivityDeps } from './deps';

export interface AttemptOutcome {
  outcome: 'succeeded' | 'retry' | 'stop';
  statusCode: number | null;
  retryAfterSeconds: number | null;
}

export function createWebhookActivities(deps: ActivityDeps & { resolve?: Resolver }) {
  const { db, clock, config } = deps;
  const allow = allowList(config.webhooks.allowedHosts);

  /** A delivery attempt's events: sent `at`, answered `done`, `final` when no retry follows a failure. */
  function events(m: WebhookMessageRecord, a: { at: Date; done: Date; meta: Record<string, unknown>; ok: boolean; final: boolean }): NewEvent[] {
    const { at, done, meta, ok, final } = a;
    const base = { projectId: m.project_id, source: 'webhooks', phase: 'webhook', requestId: m.request_id, jobId: m.job_id, permitId: m.permit_id };
    const common = { subscription_id: m.subscription_id, webhook_id: m.id, webhook_event_type: m.event_type, ...meta };
    const out: NewEvent[] = [{ ...base, eventType: 'webhook.delivery_attempted', timestamp: at, metadata: common }];
    if (ok) out.push({ ...base, eventType: 'webhook.delivery_succeeded', timestamp: done, metadata: common });
    else out.push({ ...base, eventType: 'webhook.delivery_failed', timestamp: done, metadata: { ...common, final } });
    return out;
  }

  return {
    async webhookAttempt(messageId: string, attempt: number, final: boolean): Promise<AttemptOutcome> {
      const m = await findMessage(db, messageId);
      // Not visible yet (its fan-out transaction has not committed): retried by the activity policy.
      if (!m) throw new Error(`webhook message ${messageId} not found`);
      if (m.status !== 'pending') return { outcome: 'stop', statusCode: null, retryAfterSeconds: null };
      const sub = await findSubscriptionById(db, m.subscription_id);
      if (!sub || sub.deleted_at || (!sub.enabled && m.event_type !== TEST_EVENT_TYPE)) {
        await setMessageStatus(db, m.id, 'cancelled');
        return { outcome: 'stop', statusCode: null, retryAfterSeconds: null };
      }
      const secret = (await secretBox(db, config)).open(sub.secret_encrypted, secretPurpose(sub.id));
      // jsonb keeps one key order, so every attempt sends the same bytes.
      const body = JSON.stringify(m.payload);
      const at = clock.now();
      const res = await sendWebhook(sub.url, signedHeaders(secret, m.id, Math.floor(at.getTime() / 1000), body), body, {
        timeoutMs: config.webhooks.timeoutMs,
        allow,
        resolve: deps.resolve,
      });
      const gone = res.statusCode === 410;
      const status: WebhookMessageRecord['status'] = res.ok ? 'succeeded' : gone || final ? 'failed' : 'pending';
      if (gone) await disableSubscription(db, sub.id, 'receiver_gone_410');
      await recordAttempt(
        db,
        {
          id: newId('whdel'),
          message_id: m.id,
          subscription_id: sub.id,
          project_id: m.project_id,
          attempt,
          attempted_at: at,
          status_code: res.statusCode,
          latency_ms: res.latencyMs,
          ok: res.ok,
          error: res.error,
          response_body: res.responseBody,
        },
        status,
        events(m, {
          at,
          done: clock.now(),
          meta: { attempt, status_code: res.statusCode, latency_ms: res.latencyMs, ...(res.error ? { error: res.error } : {}) },
          ok: res.ok,
          final: gone || final,
        }),
      );
      return { outcome: res.ok ? 'succeeded' : gone ? 'stop' : 'retry', statusCode: res.statusCode, retryAfterSeconds: res.retryAfterSeconds };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
