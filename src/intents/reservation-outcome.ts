/** What a call reservation against an intent answers (src/intents/reservations.ts). */

export type ReservationDenial = 'ceiling_reached' | 'not_active' | 'unknown';

export interface ReservationOutcome {
  granted: boolean;
  /** Set when not granted: at max_calls / intent completed or expired (or rejected) / no such intent. */
  reason?: ReservationDenial;
  /**
   * The lease the call was taken from (leased mode). Recorded in the permit's metadata
   * (`intent_lease`), so a lease whose process died is settled from permit records.
   */
  lease?: string;
}

/** Public reason codes for denied requests (docs/decisions/intents.md). */
export const RESERVATION_REASON_CODES: Record<ReservationDenial, string> = {
  ceiling_reached: 'workflow_intent.max_calls_exceeded',
  not_active: 'workflow_intent.not_active',
  unknown: 'workflow_intent.not_found',
};
