import type { ActivityOptions } from '@temporalio/workflow';

/**
 * Options of the activities through which a long-lived workflow (an intent's, a session's) mirrors
 * its state to PostgreSQL. Persistence must eventually succeed: the workflow already changed its
 * state, so the activity retries without a limit.
 */
export const STATE_MIRROR_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
};

/** Minimum time between two writes of such a workflow's counters to PostgreSQL. */
export const STATE_MIRROR_INTERVAL_MS = 1000;
