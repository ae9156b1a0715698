/**
 * What every permit action shares: the dependencies, the tenant check, loading a permit (and
 * releasing it first when its expiry has passed), and its view with the attestation.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../clock';
import type { Db } from '../db/pool';
import { errors } from '../errors';
import { findPermit, PermitRecord } from '../db/repositories/permits';
import { findAttestation, AttestationRecord } from '../db/repositories/permit-attestations';
import type { IntentReservations } from '../intents/reservations';
import type { Governance } from '../governance';
import type { AuthContext } from '../auth-context';
import { permitView, PermitView } from './view';

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
export const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

export interface PermitDeps {
  db: Db;
  clock: Clock;
  governance: Governance;
  /** A permit joined to an intent (`workflow_id`) takes its call from the intent's ceiling. */
  intentReservations: Pick<IntentReservations, 'reserveCall' | 'giveBack'>;
}

export function createPermitContext(deps: PermitDeps) {
  const { db, clock, governance } = deps;

  function ownProject(auth: AuthContext, projectId: string): void {
    // Same rule as /v1/projects/{id}: another tenant's id is not confirmed (404, not 403).
    if (projectId !== auth.projectId) throw errors.notFound('Project', projectId);
  }

  async function loadAttestation(p: PermitRecord): Promise<AttestationRecord | null> {
    return p.decision === 'review' || p.parent_permit_id ? findAttestation(db, p.project_id, p.id) : null;
  }

  async function view(p: PermitRecord): Promise<PermitView> {
    return permitView(p, clock.now(), { attestation: await loadAttestation(p) });
  }

  /** Releases the reservation of an allow whose expires_at has passed (event permit.expired). */
  async function expireIfStale(p: PermitRecord): Promise<PermitRecord> {
    const now = clock.now();
    if (p.reservation_state === 'active' && p.expires_at && new Date(p.expires_at).getTime() <= now.getTime()) {
      await governance.expireStaleReservations(now);
      return (await findPermit(db, p.project_id, p.id)) ?? p;
    }
    return p;
  }

  async function getPermit(projectId: string, permitId: string): Promise<PermitRecord> {
    const p = await findPermit(db, projectId, permitId);
    if (!p) throw errors.notFound('Permit', permitId);
    return expireIfStale(p);
  }

  return { ...deps, ownProject, loadAttestation, view, expireIfStale, getPermit };
}

export type PermitContext = ReturnType<typeof createPermitContext>;
