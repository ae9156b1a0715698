import { withTransaction } from '../src/db/pool';
import { appendEvents } from '../src/db/repositories/events';
import type { NewEvent } from '../src/events/types';
import { notifyChannel } from '../src/db/notify';
import { countPermitsByLease } from '../src/db/repositories/permits';
import {
  type IntentRecord,
  applyIntentVersion,
  countAllowedIntentCalls,
  findAmendment,
  findIntentForUpdate,
  insertAmendment,
  markIntentCompleted,
  markIntentExpired,
  persistActualCalls,
} from '../src/db/repositories/intents';
import { canonicalAmendment } from '../src/intents/canonical';
import { integritySigner } from '../src/intents/signing';
import { projectCost } from '../src/intents/projection';
import { amendmentView } from '../src/intents/views';
import { LEASE_REVOKE_CHANNEL, PERMIT_LEASE_KEY, intentTemporalWorkflowId, type AmendmentChange, type AmendmentView, type CompleteResult, type IntentState } from '../workflows/intent-messages';
import type { ActivityDeps } from './deps';

export interface RecordAmendmentInput {
  projectId: string;
  workflowId: string;
  amendmentId: string;
  appliedAgainstVersion: number;
  newVersion: number;
  previousExpectedCalls: number | null;
  newExpectedCalls: number | null;
  previousMaxCalls: number | null;
  newMaxCalls: number | null;
  reasonProvided: string | null;
  projection: IntentState['projection'];
}


/** A timeline event of an intent (webhook sources: workflow_intent.expired, workflow_intent.max_calls_reached). */
function intentEvent(row: IntentRecord, eventType: string, at: Date, actualCalls: number): NewEvent {
  return {
    projectId: row.project_id,
    eventType,
    // The stored events' source name, kept from before the table was named `intents`.
    source: 'workflow_intents',
    phase: 'workflow',
    timestamp: at,
    metadata: { workflow_id: row.workflow_id, version: row.version, actual_calls: actualCalls, expected_calls: row.expected_calls, max_calls: row.max_calls },
  };
}

/** Persistence of every intentWorkflow state change. Each activity is idempotent (retries are safe). */
export function createIntentActivities({ db, clock, config }: Pick<ActivityDeps, 'db' | 'clock' | 'config'>) {
  return {
    /** Signs and stores an amendment record and the intent's new version, calls and projection. */
    async recordIntentAmendment(i: RecordAmendmentInput): Promise<{ amendment: AmendmentView; projected_cost: Record<string, unknown> }> {
      const signer = await integritySigner(db, config);
      return withTransaction(db, async (tx) => {
        const existing = await findAmendment(tx, i.amendmentId);
        if (existing) return { amendment: amendmentView(existing), projected_cost: existing.projected_cost };
        let projected: Record<string, unknown>;
        try {
          projected = projectCost({ ...i.projection, expected_calls: i.newExpectedCalls, max_calls: i.newMaxCalls }) as unknown as Record<string, unknown>;
        } catch {
          // The model lost its pricing since the declaration: keep the guaranteed fields only.
          projected = { amount_micros: null, currency: 'USD', methodology: { basis: 'pricing_unavailable', provenance: 'caller_declared_workflow' } };
        }
        const createdAt = clock.now().toISOString();
        const change: AmendmentChange = {
          applied_against_version: i.appliedAgainstVersion,
          previous_expected_calls: i.previousExpectedCalls,
          new_expected_calls: i.newExpectedCalls,
          previous_max_calls: i.previousMaxCalls,
          new_max_calls: i.newMaxCalls,
          reason_provided: i.reasonProvided,
        };
        const signature = signer.signB64(
          canonicalAmendment({ project_id: i.projectId, workflow_id: i.workflowId, amendment_id: i.amendmentId, ...change, created_at: createdAt }),
        );
        const amendment = await insertAmendment(tx, {
          id: i.amendmentId,
          project_id: i.projectId,
          workflow_id: i.workflowId,
          ...change,
          projected_cost: projected,
          amendment_signature_b64: signature,
          signature_kid: signer.kid,
          created_at: createdAt,
        });
        await applyIntentVersion(tx, i.projectId, i.workflowId, { version: i.newVersion, expectedCalls: i.newExpectedCalls, maxCalls: i.newMaxCalls, projectedCost: projected });
        return { amendment: amendmentView(amendment), projected_cost: projected };
      });
    },

    /**
     * Completes the intent: recomputes actual calls from permit records (allowed permits carrying
     * this workflow id), compares them with the workflow's counter, stores both.
     */
    async completeIntent(i: { projectId: string; workflowId: string; cachedActualCalls: number; reasonProvided: string | null }): Promise<CompleteResult> {
      return withTransaction(db, async (tx) => {
        let row = await findIntentForUpdate(tx, i.projectId, i.workflowId);
        if (!row) throw new Error(`intent ${i.workflowId} of ${i.projectId} is not persisted`);
        if (row.status !== 'completed') {
          const authoritative = await countAllowedIntentCalls(tx, i.projectId, i.workflowId);
          const reconciliation = {
            authoritative_actual_calls: authoritative,
            cached_actual_calls: i.cachedActualCalls,
            counter_divergence_detected: authoritative !== i.cachedActualCalls,
            reason_provided: i.reasonProvided,
          };
          row = await markIntentCompleted(tx, i.projectId, i.workflowId, { at: clock.now(), actualCalls: authoritative, reconciliation });
        }
        const rec = row.reconciliation as unknown as CompleteResult['reconciliation'];
        return {
          workflow_id: row.workflow_id,
          status: 'completed',
          version: row.version,
          actual_calls: row.actual_calls,
          expected_calls: row.expected_calls,
          max_calls: row.max_calls,
          completed_at: row.completed_at!.toISOString(),
          reconciliation: {
            authoritative_actual_calls: rec.authoritative_actual_calls,
            cached_actual_calls: rec.cached_actual_calls,
            counter_divergence_detected: rec.counter_divergence_detected,
          },
        };
      });
    },

    /** Moves an active intent to expired (max_duration_seconds elapsed) with its final counter. */
    async expireIntent(i: { projectId: string; workflowId: string; actualCalls: number }): Promise<void> {
      await withTransaction(db, async (tx) => {
        const row = await findIntentForUpdate(tx, i.projectId, i.workflowId);
        const at = clock.now();
        await markIntentExpired(tx, i.projectId, i.workflowId, { at, actualCalls: i.actualCalls });
        if (row?.status === 'active') await appendEvents(tx, [intentEvent(row, 'workflow_intent.expired', at, i.actualCalls)]);
      });
    },

    /** Mirrors the call counter (throttled by the workflow). */
    async persistIntentCounter(i: { projectId: string; workflowId: string; actualCalls: number }): Promise<void> {
      await withTransaction(db, async (tx) => {
        const row = await findIntentForUpdate(tx, i.projectId, i.workflowId);
        await persistActualCalls(tx, i.projectId, i.workflowId, i.actualCalls);
        // The counter crossing max_calls (once per crossing; an amendment raising the ceiling re-arms it).
        if (row && row.status === 'active' && row.max_calls !== null && row.actual_calls < row.max_calls && i.actualCalls >= row.max_calls) {
          await appendEvents(tx, [intentEvent(row, 'workflow_intent.max_calls_reached', clock.now(), i.actualCalls)]);
        }
      });
    },

    /**
     * Announces revoked leases to their holders (LISTEN in every API process,
     * src/intents/reservations.ts). Best effort: a holder that misses it returns the lease
     * at its deadline at the latest.
     */
    async notifyLeaseHolders(i: { projectId: string; workflowId: string; leaseIds: string[] }): Promise<void> {
      const head = intentTemporalWorkflowId(i.projectId, i.workflowId);
      // NOTIFY payloads are limited to 8,000 bytes.
      for (let k = 0; k < i.leaseIds.length; k += 200) {
        await notifyChannel(db, LEASE_REVOKE_CHANNEL, `${head} ${i.leaseIds.slice(k, k + 200).join(',')}`);
      }
    },

    /** Calls consumed on leases whose holder did not return them: allowed permits carrying the lease id. */
    async countLeasePermits(i: { projectId: string; workflowId: string; leaseIds: string[] }): Promise<Record<string, number>> {
      return countPermitsByLease(db, PERMIT_LEASE_KEY, i);
    },
  };
}

export type IntentActivities = ReturnType<typeof createIntentActivities>;
