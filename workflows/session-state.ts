/**
 * The session's state and its pure transitions (Temporal's "safe message handlers" shape: the
 * workflow's handlers call these synchronously, so each operation is decided atomically against
 * the counters left by the previous one). No workflow APIs here: `now` is passed in.
 */
import type { EndArgs, SessionDenial, SessionOp, SessionOpResult, SessionSnapshot } from './session-messages';

export class SessionActor {
  constructor(readonly s: SessionSnapshot) {}

  get active(): boolean {
    return this.s.status === 'active';
  }

  reservedMicros(): number {
    let total = 0;
    for (const r of Object.values(this.s.reservations)) total += r.micros;
    return total;
  }

  /** Committed spend: settled plus everything still reserved. */
  committedMicros(): number {
    return this.s.spentMicros + this.reservedMicros();
  }

  apply(op: SessionOp, now: number): SessionOpResult {
    if (op.kind === 'touch') {
      if (this.active) this.s.lastActivityMs = now;
      return this.result(this.active);
    }
    if (op.kind === 'release') {
      const r = this.s.reservations[op.id];
      if (r) {
        delete this.s.reservations[op.id];
        if (r.turn) this.s.turns = Math.max(0, this.s.turns - 1);
      }
      return this.result(true);
    }
    if (op.kind === 'settle') {
      const r = this.s.reservations[op.id];
      // Settled once: a re-sent settle finds no reservation and changes nothing.
      if (r) {
        delete this.s.reservations[op.id];
        this.s.spentMicros += Math.max(0, Math.floor(op.actualMicros));
        if (this.active) this.s.lastActivityMs = now;
      }
      return this.result(true);
    }
    if (this.s.reservations[op.id]) return this.result(true); // a re-sent grant
    const denial = this.check(op);
    if (denial) return this.result(false, denial);
    const turn = op.kind === 'turn';
    this.s.reservations[op.id] = { micros: Math.max(0, Math.floor(op.estimateMicros)), turn };
    if (turn) this.s.turns += 1;
    this.s.lastActivityMs = now;
    return { ...this.result(true), ...(turn ? { turnNumber: this.s.turns } : {}) };
  }

  private check(op: { kind: 'turn' | 'action'; estimateMicros: number }): SessionDenial | null {
    if (!this.active) return 'not_active';
    const l = this.s.limits;
    if (op.kind === 'turn' && l.maxTurns !== null && this.s.turns + 1 > l.maxTurns) return 'max_turns_reached';
    if (l.maxCostMicros !== null && this.committedMicros() + Math.max(0, op.estimateMicros) > l.maxCostMicros) return 'max_cost_exceeded';
    return null;
  }

  private result(granted: boolean, reason?: SessionDenial): SessionOpResult {
    return {
      granted,
      ...(reason ? { reason } : {}),
      status: this.s.status,
      turns: this.s.turns,
      spentMicros: this.s.spentMicros,
      reservedMicros: this.reservedMicros(),
    };
  }

  /** The earliest time the session expires by itself (idle timeout or max duration), and why. */
  nextExpiry(): { atMs: number; reason: 'idle_timeout' | 'max_duration_reached' } {
    const idle = this.s.lastActivityMs + this.s.limits.idleTimeoutMs;
    const max = this.s.limits.expiresAtMs;
    return max !== null && max <= idle ? { atMs: max, reason: 'max_duration_reached' } : { atMs: idle, reason: 'idle_timeout' };
  }

  close(status: 'ended' | 'expired' | 'failed', reason: string): void {
    this.s.status = status;
    this.s.endReason = reason;
  }

  end(args: EndArgs): void {
    this.close(args.status, args.reason);
  }

  dirty(): boolean {
    return this.s.turns !== this.s.persisted.turns || this.s.spentMicros !== this.s.persisted.spentMicros;
  }
}
