/** What the webhookDeliveryWorkflow shares with its callers. Safe to import outside the sandbox. */

export interface WebhookDeliveryInput {
  /** The message (webhook-id) to deliver. */
  messageId: string;
  /** Waits before each attempt in ms (WEBHOOK_RETRY_SCHEDULE_MS); its length is the number of attempts. */
  scheduleMs: number[];
}

/**
 * Delivery attempts (the activity: an HTTP call to the receiver) run on their own task queue
 * (`<queue>-webhooks`, an activity-only worker in each worker process), so they never wait for a
 * slot behind job dispatches. The delivery workflow itself runs on the main queue: its tasks are
 * short, and one workflow sandbox per process is enough.
 */
export function webhookTaskQueue(taskQueue: string): string {
  return `${taskQueue}-webhooks`;
}

export function webhookDeliveryWorkflowId(messageId: string): string {
  return `webhook-delivery:${messageId}`;
}

/** The longest a receiver's Retry-After can push the next attempt (the schedule's longest wait, at least 1 h). */
export function retryAfterCapMs(scheduleMs: number[]): number {
  return Math.max(3_600_000, ...scheduleMs);
}
