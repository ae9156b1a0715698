/**
 * The permit-first API's logic (routes in src/api/routes/permits.ts), one file per action:
 * issue.ts (create, dry run), usage.ts (closeout, rollup), review.ts (attest, revoke),
 * evidence.ts, read-models.ts (timeline, bundle, lineage, export), over the shared context.ts.
 * Governance decides and reserves (src/governance). Rules: docs/decisions/permit-first.md.
 */
import { createPermitContext, type PermitDeps } from './context';
import { permitEvidence } from './evidence';
import { permitIssuing } from './issue';
import { permitReadModels } from './read-models';
import { permitReview } from './review';
import { permitUsage } from './usage';

export function createPermitService(deps: PermitDeps) {
  const ctx = createPermitContext(deps);
  return {
    getPermit: ctx.getPermit,
    view: ctx.view,
    loadAttestation: ctx.loadAttestation,
    ...permitIssuing(ctx),
    ...permitReadModels(ctx),
    ...permitUsage(ctx),
    ...permitReview(ctx),
    ...permitEvidence(ctx),
  };
}

export type PermitService = ReturnType<typeof createPermitService>;
