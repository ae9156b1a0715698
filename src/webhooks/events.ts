/**
 * Webhook event types and how timeline events become them. A subscription names the types it
 * wants; the fan-out (src/webhooks/fanout.ts) maps each chained timeline event to zero or more
 * types with `webhookTypesOf`.
 */
export const WEBHOOK_EVENT_TYPES = [
  'job.completed',
  'job.failed',
  'job.cancelled',
  /** A permit evaluated to review (it waits for an attestation). */
  'permit.challenged',
  'workflow_intent.expired',
  'workflow_intent.max_calls_reached',
  /** A request crossed the monthly threshold (budgets.monthly_threshold_ratio). */
  'budget.threshold_exceeded',
  /** A request was refused by a daily, weekly, monthly or quarterly cap. */
  'budget.cap_exceeded',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The type POST /v1/webhooks/{id}/test sends (not subscribable). */
export const TEST_EVENT_TYPE = 'webhook.test';

/** Timeline event types the fan-out reads (everything else is skipped). */
export const SOURCE_EVENT_TYPES = ['job.completed', 'job.failed', 'job.cancelled', 'permit.challenged', 'permit.denied', 'workflow_intent.expired', 'workflow_intent.max_calls_reached'];

export function webhookTypesOf(e: { event_type: string; metadata: Record<string, unknown> }): WebhookEventType[] {
  const out: WebhookEventType[] = [];
  const code = typeof e.metadata?.reason_code === 'string' ? e.metadata.reason_code : '';
  switch (e.event_type) {
    case 'job.completed':
    case 'job.failed':
    case 'job.cancelled':
    case 'workflow_intent.expired':
    case 'workflow_intent.max_calls_reached':
      out.push(e.event_type);
      break;
    case 'permit.challenged':
      out.push('permit.challenged');
      break;
    default:
      break;
  }
  if (code === 'budget.monthly_threshold_exceeded' && (e.event_type === 'permit.challenged' || e.event_type === 'permit.denied')) out.push('budget.threshold_exceeded');
  if (/^budget\.(daily|weekly|monthly|quarterly)_cap_exceeded$/.test(code) && e.event_type === 'permit.denied') out.push('budget.cap_exceeded');
  return out;
}
