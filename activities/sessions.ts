import { withTransaction } from '../src/db/pool';
import { closeSessionRecord, findSession, updateSessionCounters } from '../src/db/repositories/sessions';
import { listUnsettledActionPermitIds } from '../src/db/repositories/session-turns';
import { sessionEvent } from '../src/sessions/events';
import { recordOpenTurns } from '../src/sessions/turn-record';
import type { ActivityDeps } from './deps';

export interface CloseSessionInput {
  projectId: string;
  sessionId: string;
  status: 'ended' | 'expired' | 'failed';
  reason: string;
  error: { code: string; message: string } | null;
  turns: number;
  spentMicros: number;
}

/** Timeline event of a close: expiry and a normal end are session.ended, a reported error session.failed. */
export function closingEventType(status: CloseSessionInput['status']): 'session.ended' | 'session.failed' {
  return status === 'failed' ? 'session.failed' : 'session.ended';
}

export function createSessionActivities(deps: ActivityDeps) {
  return {
    async persistSessionCounters(input: { projectId: string; sessionId: string; turns: number; spentMicros: number }): Promise<void> {
      await updateSessionCounters(deps.db, input);
    },

    /**
     * Final record of a session: status, counters, reason, the closing event (written once). A turn
     * granted but never settled gets its call record now (failed, `usage_not_reported`), which
     * releases its reservation; an unsettled action's reservation is released.
     */
    async closeSession(input: CloseSessionInput): Promise<void> {
      const session = await findSession(deps.db, input.projectId, input.sessionId);
      if (!session) return;
      // Reservations first: once a reader sees the session closed, nothing of it is still held. A
      // retry after a failure between the two releases nothing twice (only active ones are, and a
      // turn is recorded once).
      await recordOpenTurns(deps, session, `session_${input.status}`);
      for (const permitId of await listUnsettledActionPermitIds(deps.db, input.sessionId)) {
        await deps.governance.release(permitId, `session_${input.status}`);
      }
      const at = deps.clock.now();
      await withTransaction(deps.db, (c) =>
        closeSessionRecord(
          c,
          { ...input, at },
          sessionEvent(session, closingEventType(input.status), {
            status: input.status,
            reason: input.reason,
            turns: input.turns,
            spent_usd_micros: input.spentMicros,
            ...(input.error ? { error: input.error } : {}),
          }, { at }),
        ),
      );
    },
  };
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;
