/** The session service's dependencies for one API process (one coalescing client per Temporal client). */
import { temporalServiceDeps, type ApiDeps } from './deps';
import { SessionOps } from '../sessions/ops-client';
import type { SessionServiceDeps } from '../sessions/service';

const perClient = new WeakMap<object, SessionOps>();

export function sessionServiceDeps(deps: ApiDeps): SessionServiceDeps {
  let ops = perClient.get(deps.temporal.client);
  if (!ops) {
    ops = new SessionOps(deps.temporal.client);
    perClient.set(deps.temporal.client, ops);
  }
  return { ...temporalServiceDeps(deps), governance: deps.governance, ops };
}
