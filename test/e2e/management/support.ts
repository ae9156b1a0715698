import { randomUUID } from 'node:crypto';
import type { Db } from '../../../src/db/pool';
import { createUser } from '../../../src/auth/users';
import { upsertMember, type Role } from '../../../src/db/repositories/users';

export const PASSWORD = 'correct horse battery staple';

/** A user with `role` in each given project; returns the e-mail. */
export async function userWithRoles(db: Db, memberships: { projectId: string; role: Role }[], password = PASSWORD): Promise<{ id: string; email: string }> {
  const email = `user-${randomUUID()}@example.test`;
  const user = await createUser(db, { email, password });
  for (const m of memberships) await upsertMember(db, { projectId: m.projectId, userId: user.id, role: m.role });
  return { id: user.id, email };
}

type Call = (method: string, path: string, opts?: { key?: string; body?: unknown; headers?: Record<string, string> }) => Promise<{ status: number; json: any; text: string; headers: Headers }>;

/** Signs in over HTTP and returns the session grant. */
export async function signIn(call: Call, email: string, password = PASSWORD): Promise<{ access_token: string; refresh_token: string; session_id: string }> {
  const res = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'password', email, password } });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${res.text}`);
  return res.json;
}
