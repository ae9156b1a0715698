/**
 * Evidence attached to a permit: POST and GET /v1/permits/{id}/evidence.
 */
import { z } from 'zod';
import { withTransaction } from '../db/pool';
import { newId } from '../ids';
import { appendEvents } from '../db/repositories/events';
import { insertEvidence, listEvidence } from '../db/repositories/permit-evidence';
import type { AuthContext } from '../auth-context';
import { evidenceSchema } from './schemas';
import { evidenceView } from './view';
import type { PermitContext } from './context';

export function permitEvidence(ctx: PermitContext) {
  const { db, clock, getPermit } = ctx;

  async function addEvidence(auth: AuthContext, permitId: string, b: z.infer<typeof evidenceSchema>) {
    const p = await getPermit(auth.projectId, permitId);
    const now = clock.now();
    // The body's members as given (the schema is strict), those it leaves out null.
    const given = { description: null, uri: null, content_sha256: null, data: null, ...b };
    const rec = { ...given, id: newId('evd'), project_id: auth.projectId, permit_id: p.id, submitted_by: b.submitted_by ?? auth.actor, created_at: now };
    await withTransaction(db, async (c) => {
      await insertEvidence(c, rec);
      await appendEvents(c, [{
        projectId: auth.projectId, eventType: 'permit.evidence_attached', source: 'permits', phase: 'evidence', provider: p.provider, model: p.model,
        permitId: p.id, requestId: p.request_id, timestamp: now,
        metadata: { evidence_id: rec.id, type: rec.type, content_sha256: rec.content_sha256, uri: rec.uri },
      }]);
    });
    return evidenceView(rec);
  }

  async function evidence(projectId: string, permitId: string) {
    const p = await getPermit(projectId, permitId);
    return { object: 'list', permit_id: p.id, data: (await listEvidence(db, projectId, p.id)).map(evidenceView) };
  }
  return { addEvidence, evidence };
}
