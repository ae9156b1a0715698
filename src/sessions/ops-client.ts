/**
 * The API side of sessionWorkflow's Updates. Each process sends at most one `applyOps` Update per
 * session at a time: operations arriving while one is in flight are queued and sent together as
 * the next one, so a busy session never
 * approaches the server's 10 in-flight Updates and spends one Update per batch of its 2,000-per-run
 * budget (the workflow continues as new well before).
 */
import type { Client } from '@temporalio/client';
import {
  MAX_OPS_PER_UPDATE,
  SessionOp,
  SessionOpResult,
  applyOpsUpdate,
  sessionTemporalWorkflowId,
} from '../../workflows/session-messages';

interface Waiter {
  op: SessionOp;
  resolve(r: SessionOpResult): void;
  reject(err: unknown): void;
}

interface Lane {
  inFlight: boolean;
  queue: Waiter[];
}

export class SessionOps {
  private readonly lanes = new Map<string, Lane>();
  /** Updates sent so far (tests read it to see coalescing at work). */
  updatesSent = 0;

  constructor(private readonly client: Client) {}

  apply(projectId: string, sessionId: string, op: SessionOp): Promise<SessionOpResult> {
    const key = sessionTemporalWorkflowId(projectId, sessionId);
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { inFlight: false, queue: [] };
      this.lanes.set(key, lane);
    }
    const l = lane;
    const promise = new Promise<SessionOpResult>((resolve, reject) => l.queue.push({ op, resolve, reject }));
    if (!l.inFlight) void this.flush(key, l);
    return promise;
  }

  private async flush(key: string, lane: Lane): Promise<void> {
    lane.inFlight = true;
    try {
      for (;;) {
        // Let callers arriving in the same tick join this batch.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (lane.queue.length === 0) break;
        const batch = lane.queue.splice(0, MAX_OPS_PER_UPDATE);
        try {
          const results = await this.send(key, batch.map((w) => w.op));
          batch.forEach((w, i) => w.resolve(results[i]));
        } catch (err) {
          batch.forEach((w) => w.reject(err));
        }
      }
    } finally {
      lane.inFlight = false;
      if (lane.queue.length === 0) this.lanes.delete(key);
      else void this.flush(key, lane);
    }
  }

  /** One Update; retried briefly when it lands while the run is continuing as new. */
  private async send(key: string, ops: SessionOp[]): Promise<SessionOpResult[]> {
    const handle = this.client.workflow.getHandle(key);
    for (let attempt = 1; ; attempt++) {
      this.updatesSent++;
      try {
        return await handle.executeUpdate(applyOpsUpdate, { args: [ops] });
      } catch (err) {
        const name = (err as Error)?.name ?? '';
        if (attempt >= 5 || name === 'WorkflowNotFoundError' || name === 'WorkflowUpdateFailedError') throw err;
        const running = await handle.describe().then((d) => d.status.name === 'RUNNING', () => false);
        if (!running) throw err;
        await new Promise((r) => setTimeout(r, 20 * attempt));
      }
    }
  }
}
