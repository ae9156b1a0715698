import type { Client } from '@temporalio/client';
import type { Queryable } from '../db/pool';
import type { Logger } from '../logger';
import { findWorkflowIntent } from '../db/repositories/workflow-intents';
import { intentTemporalWorkflowId, reserveCallsUpdate, ReserveResult } from '../../workflows/intent-messages';

export type ReservationDenial = 'ceiling_reached' | 'not_active' | 'unknown';

export interface ReservationOutcome {
  granted: boolean;
  /** Set when not granted: at max_calls / intent completed or expired (or rejected) / no such intent. */
  reason?: ReservationDenial;
}

/** Public reason codes for denied requests (docs/decisions.md "Workflow intents"). */
export const RESERVATION_REASON_CODES: Record<ReservationDenial, string> = {
  ceiling_reached: 'workflow_intent.max_calls_exceeded',
  not_active: 'workflow_intent.not_active',
  unknown: 'workflow_intent.not_found',
};

interface Waiter {
  resolve(o: ReservationOutcome): void;
  reject(err: unknown): void;
}

interface Lane {
  inFlight: boolean;
  queue: Waiter[];
}

export interface IntentReservationsOptions {
  client: Client;
  db: Queryable;
  logger?: Logger;
  /** Most callers served by one Update (the rest wait for the next one). */
  maxBatch?: number;
}

/**
 * Call reservations against workflow intents, coalesced per intent in this process: at most one
 * `reserveCalls` Update per intent is in flight; callers arriving meanwhile join the next batch,
 * which is sent as one Update for n calls as soon as the previous one returns. The granted count of
 * a batch goes to its callers first come, first served. The workflow never grants past max_calls.
 */
export class IntentReservations {
  private readonly lanes = new Map<string, Lane>();
  private readonly maxBatch: number;
  /** Updates sent so far (for tests and the benchmark). */
  updatesSent = 0;

  constructor(private readonly opts: IntentReservationsOptions) {
    this.maxBatch = opts.maxBatch ?? 1000;
  }

  reserveCall(projectId: string, workflowId: string): Promise<ReservationOutcome> {
    const key = intentTemporalWorkflowId(projectId, workflowId);
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { inFlight: false, queue: [] };
      this.lanes.set(key, lane);
    }
    const promise = new Promise<ReservationOutcome>((resolve, reject) => lane.queue.push({ resolve, reject }));
    if (!lane.inFlight) {
      lane.inFlight = true;
      void this.flush(key, lane, projectId, workflowId);
    }
    return promise;
  }

  private async flush(key: string, lane: Lane, projectId: string, workflowId: string): Promise<void> {
    lane.inFlight = true;
    try {
      for (;;) {
        // Yield one macrotask turn first, so callers arriving in the same tick (or re-calling as
        // soon as the previous batch resolved them) share this Update instead of waiting for it.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (lane.queue.length === 0) break;
        const batch = lane.queue.splice(0, this.maxBatch);
        try {
          const result = await this.sendUpdate(key, batch.length);
          batch.forEach((w, i) =>
            w.resolve(i < result.granted ? { granted: true } : { granted: false, reason: result.status === 'active' ? 'ceiling_reached' : 'not_active' }),
          );
        } catch (err) {
          let outcome: ReservationOutcome | null = null;
          try {
            const row = await findWorkflowIntent(this.opts.db, projectId, workflowId);
            if (!row) outcome = { granted: false, reason: 'unknown' };
            else if (row.status !== 'active') outcome = { granted: false, reason: 'not_active' };
          } catch {
            /* fall through to the original error */
          }
          if (outcome) batch.forEach((w) => w.resolve(outcome));
          else {
            this.opts.logger?.warn({ err, workflow_id: workflowId }, 'intent reservation failed');
            batch.forEach((w) => w.reject(err));
          }
        }
      }
    } finally {
      lane.inFlight = false;
      if (lane.queue.length === 0) this.lanes.delete(key);
      else void this.flush(key, lane, projectId, workflowId);
    }
  }

  /** One Update; retried briefly when it lands while a run is continuing as new. */
  private async sendUpdate(temporalWorkflowId: string, n: number): Promise<ReserveResult> {
    const handle = this.opts.client.workflow.getHandle(temporalWorkflowId);
    for (let attempt = 1; ; attempt++) {
      this.updatesSent++;
      try {
        return await handle.executeUpdate(reserveCallsUpdate, { args: [n] });
      } catch (err) {
        const name = (err as Error)?.name ?? '';
        // A closed workflow or a missing one is final; anything else (e.g. the run closed by
        // continue-as-new between admission and acceptance) is retried a few times.
        if (attempt >= 5 || name === 'WorkflowNotFoundError' || name === 'WorkflowUpdateFailedError') throw err;
        try {
          const desc = await handle.describe();
          if (desc.status.name !== 'RUNNING') throw err;
        } catch {
          throw err;
        }
        await new Promise((r) => setTimeout(r, 10 * attempt));
      }
    }
  }
}

export function createIntentReservations(opts: IntentReservationsOptions): IntentReservations {
  return new IntentReservations(opts);
}
