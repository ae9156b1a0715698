import { proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import { retryAfterCapMs, webhookTaskQueue, type WebhookDeliveryInput } from './webhook-messages';

/**
 * Durable delivery of one webhook message: one attempt per entry of the schedule (by default
 * immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), each after its wait or the receiver's
 * Retry-After when that is longer. Stops at the first 2xx, at a 410 (the subscription is disabled)
 * or when the subscription is gone or disabled. Each attempt signs at send time and is recorded by
 * the activity (webhook_attempts, webhook.* timeline events).
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<{ status: 'succeeded' | 'failed' | 'stopped'; attempts: number }> {
  const { webhookAttempt } = proxyActivities<WebhookActivities>({
    taskQueue: webhookTaskQueue(workflowInfo().taskQueue),
    // The HTTP timeout plus the recording; a crashed worker's attempt is retried (same webhook-id).
    startToCloseTimeout: '2 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
  });
  const schedule = input.scheduleMs.length > 0 ? input.scheduleMs : [0];
  let retryAfterMs = 0;
  for (let i = 0; i < schedule.length; i++) {
    const wait = Math.max(schedule[i], Math.min(retryAfterMs, retryAfterCapMs(schedule)));
    if (wait > 0) await sleep(wait);
    const r = await webhookAttempt(input.messageId, i + 1, i + 1 === schedule.length);
    if (r.outcome === 'succeeded') return { status: 'succeeded', attempts: i + 1 };
    if (r.outcome === 'stop') return { status: 'stopped', attempts: i + 1 };
    retryAfterMs = (r.retryAfterSeconds ?? 0) * 1000;
  }
  return { status: 'failed', attempts: schedule.length };
}
