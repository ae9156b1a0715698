import type { KeyScope } from './db/repositories/api-keys';
import type { Plan } from './db/repositories/projects';

/**
 * Who is calling: what authentication established from the presented API key, or from a member's
 * user access token on the routes that accept one (the dashboard; `keyId` is then null and the
 * scope follows the role: admin and owner act as `admin`, viewer as `client`).
 */
export interface AuthContext {
  projectId: string;
  plan: Plan;
  keyId: string | null;
  scope: KeyScope;
  /** How the caller is named in audit fields: `api_key:<id>` or `user:<id>`. */
  actor: string;
}

/** The caller of a route that accepts only API keys: the key is known. */
export type KeyAuthContext = AuthContext & { keyId: string };
