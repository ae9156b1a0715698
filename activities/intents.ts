import { withTransaction } from '../src/db/pool';
import { persistActualCalls, WorkflowIntentRecord, AmendmentRecord } from '../src/db/repositories/workflow-intents';
import { canonicalAmendment } from '../src/intents/canonical';
import { integritySigner } from '../src/intents/signing';
import { projectCost } from '../src/intents/projection';
import { amendmentView } from '../src/intents/views';
import type { AmendmentView, CompleteResult, IntentState } from '../workflows/intent-messages';
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


/** Persistence of every intentWorkflow state change. Each activity is idempotent (retries are safe). */
export function createIntentActivities({ db, clock, config }: Pick<ActivityDeps, 'db' | 'clock' | 'config'>) {
  return {
    /** Signs and stores an amendment record and the intent's new version, calls and projection. */
    async recordIntentAmendment(i: RecordAmendmentInput): Promise<{ amendment: AmendmentView; projected_cost: Record<string, unknown> }> {
      const signer = await integritySigner(db, config);
      return withTransaction(db, async (tx) => {
        const existing = await tx.query<AmendmentRecord>('SELECT * FROM workflow_intent_amendments WHERE id = $1', [i.amendmentId]);
        if (existing.rows[0]) return { amendment: amendmentView(existing.rows[0]), projected_cost: existing.rows[0].projected_cost };
        let projected: Record<string, unknown>;
        try {
          projected = projectCost({ ...i.projection, expected_calls: i.newExpectedCalls, max_calls: i.newMaxCalls }) as unknown as Record<string, unknown>;
        } catch {
          // The model lost its pricing since the declaration: keep the guaranteed fields only.
          projected = { amount_micros: null, currency: 'USD', methodology: { basis: 'pricing_unavailable', provenance: 'caller_declared_workflow' } };
        }
        const createdAt = clock.now().toISOString();
        const signature = signer.signB64(
          canonicalAmendment({
            project_id: i.projectId,
            workflow_id: i.workflowId,
            amendment_id: i.amendmentId,
            applied_against_version: i.appliedAgainstVersion,
            previous_expected_calls: i.previousExpectedCalls,
            new_expected_calls: i.newExpectedCalls,
            previous_max_calls: i.previousMaxCalls,
            new_max_calls: i.newMaxCalls,
            reason_provided: i.reasonProvided,
            created_at: createdAt,
          }),
        );
        const { rows } = await tx.query<AmendmentRecord>(
          `INSERT INTO workflow_intent_amendments (id, project_id, workflow_id, applied_against_version, previous_expected_calls,
             new_expected_calls, previous_max_calls, new_max_calls, reason_provided, projected_cost, amendment_signature_b64,
             signature_kid, created_at)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13) RETURNING *`,
          [
            i.amendmentId,
            i.projectId,
            i.workflowId,
            i.appliedAgainstVersion,
            i.previousExpectedCalls,
            i.newExpectedCalls,
            i.previousMaxCalls,
            i.newMaxCalls,
            i.reasonProvided,
            JSON.stringify(projected),
            signature,
            signer.kid,
            createdAt,
          ],
        );
        await tx.query(
          `UPDATE workflow_intents SET version = $3, expected_calls = $4, max_calls = $5, projected_cost = $6, updated_at = now()
           WHERE project_id = $1 AND workflow_id = $2 AND version < $3`,
          [i.projectId, i.workflowId, i.newVersion, i.newExpectedCalls, i.newMaxCalls, JSON.stringify(projected)],
        );
        return { amendment: amendmentView(rows[0]), projected_cost: projected };
      });
    },

    /**
     * Completes the intent: recomputes actual calls from permit records (allowed permits carrying
     * this workflow id), compares them with the workflow's counter, stores both.
     */
    async completeIntent(i: { projectId: string; workflowId: string; cachedActualCalls: number; reasonProvided: string | null }): Promise<CompleteResult> {
      return withTransaction(db, async (tx) => {
        const { rows } = await tx.query<WorkflowIntentRecord>(
          'SELECT * FROM workflow_intents WHERE project_id = $1 AND workflow_id = $2 FOR UPDATE',
          [i.projectId, i.workflowId],
        );
        let row = rows[0];
        if (!row) throw new Error(`workflow intent ${i.workflowId} of ${i.projectId} is not persisted`);
        if (row.status !== 'completed') {
          const count = await tx.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND workflow_id = $2 AND decision = 'allow'`,
            [i.projectId, i.workflowId],
          );
          const authoritative = count.rows[0].n;
          const reconciliation = {
            authoritative_actual_calls: authoritative,
            cached_actual_calls: i.cachedActualCalls,
            counter_divergence_detected: authoritative !== i.cachedActualCalls,
            reason_provided: i.reasonProvided,
          };
          const updated = await tx.query<WorkflowIntentRecord>(
            `UPDATE workflow_intents SET status = 'completed', completed_at = $3, actual_calls = $4, reconciliation = $5, updated_at = now()
             WHERE project_id = $1 AND workflow_id = $2 RETURNING *`,
            [i.projectId, i.workflowId, clock.now(), authoritative, JSON.stringify(reconciliation)],
          );
          row = updated.rows[0];
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
      await db.query(
        `UPDATE workflow_intents SET status = 'expired', expired_at = $3, actual_calls = $4, updated_at = now()
         WHERE project_id = $1 AND workflow_id = $2 AND status = 'active'`,
        [i.projectId, i.workflowId, clock.now(), i.actualCalls],
      );
    },

    /** Mirrors the call counter (throttled by the workflow). */
    async persistIntentCounter(i: { projectId: string; workflowId: string; actualCalls: number }): Promise<void> {
      await persistActualCalls(db, i.projectId, i.workflowId, i.actualCalls);
    },
  };
}

export type IntentActivities = ReturnType<typeof createIntentActivities>;
