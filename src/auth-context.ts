import type { KeyScope } from './db/repositories/api-keys';
import type { Plan } from './db/repositories/projects';

/** Who is calling: what authentication established from the presented API key. */
export interface AuthContext {
  projectId: string;
  plan: Plan;
  keyId: string;
  scope: KeyScope;
}
