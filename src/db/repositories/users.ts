/** Dashboard users and their project memberships (tables users, project_members). */
import type { Queryable } from '../pool';
import { newId } from '../../ids';
import type { Plan } from './projects';

export type Role = 'owner' | 'admin' | 'viewer';
export const ROLES: readonly Role[] = ['owner', 'admin', 'viewer'];

export interface User {
  id: string;
  email: string;
  created_at: Date;
  disabled_at: Date | null;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function insertUser(db: Queryable, input: { email: string; passwordHash: string }): Promise<User | null> {
  const { rows } = await db.query<User>(
    `INSERT INTO users (id, email, email_normalized, password_hash) VALUES ($1, $2, $3, $4)
     ON CONFLICT (email_normalized) DO NOTHING RETURNING id, email, created_at, disabled_at`,
    [newId('user'), input.email.trim(), normalizeEmail(input.email), input.passwordHash],
  );
  return rows[0] ?? null;
}

export async function findUserForLogin(db: Queryable, email: string): Promise<(User & { password_hash: string }) | null> {
  const { rows } = await db.query<User & { password_hash: string }>(
    'SELECT id, email, created_at, disabled_at, password_hash FROM users WHERE email_normalized = $1',
    [normalizeEmail(email)],
  );
  return rows[0] ?? null;
}

export async function findUserByEmail(db: Queryable, email: string): Promise<User | null> {
  const { rows } = await db.query<User>('SELECT id, email, created_at, disabled_at FROM users WHERE email_normalized = $1', [normalizeEmail(email)]);
  return rows[0] ?? null;
}

export async function findUser(db: Queryable, id: string): Promise<User | null> {
  const { rows } = await db.query<User>('SELECT id, email, created_at, disabled_at FROM users WHERE id = $1', [id]);
  return rows[0] ?? null;
}

export async function setUserPasswordHash(db: Queryable, userId: string, passwordHash: string): Promise<void> {
  await db.query('UPDATE users SET password_hash = $2 WHERE id = $1', [userId, passwordHash]);
}

/** Adds the member or changes their role. */
export async function upsertMember(db: Queryable, input: { projectId: string; userId: string; role: Role }): Promise<void> {
  await db.query(
    `INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)
     ON CONFLICT (project_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
    [input.projectId, input.userId, input.role],
  );
}

/**
 * The caller's role in a project, read together with the session's liveness (one round trip per
 * management request): null when the session is revoked or expired, the user disabled, or the
 * user no member of the project.
 */
export async function findSessionRole(
  db: Queryable,
  input: { sessionId: string; userId: string; projectId: string },
): Promise<{ role: Role; plan: Plan } | null> {
  const { rows } = await db.query<{ role: Role; plan: Plan }>(
    `SELECT m.role, p.plan
       FROM auth_sessions s
       JOIN users u ON u.id = s.user_id AND u.disabled_at IS NULL
       JOIN project_members m ON m.user_id = s.user_id AND m.project_id = $3
       JOIN projects p ON p.id = m.project_id
      WHERE s.id = $1 AND s.user_id = $2 AND s.revoked_at IS NULL AND s.expires_at > now()`,
    [input.sessionId, input.userId, input.projectId],
  );
  return rows[0] ?? null;
}

export interface MemberProject {
  id: string;
  name: string;
  plan: Plan;
  created_at: Date;
  role: Role;
}

/** A user's projects, oldest first, after the (created_at, id) cursor when given. */
export async function listUserProjects(
  db: Queryable,
  input: { userId: string; limit: number; after?: { createdAt: string; id: string } },
): Promise<MemberProject[]> {
  const { rows } = await db.query<MemberProject>(
    `SELECT p.id, p.name, p.plan, p.created_at, m.role
       FROM project_members m JOIN projects p ON p.id = m.project_id
      WHERE m.user_id = $1 AND ($2::timestamptz IS NULL OR (p.created_at, p.id) > ($2::timestamptz, $3::text))
      ORDER BY p.created_at, p.id LIMIT $4`,
    [input.userId, input.after?.createdAt ?? null, input.after?.id ?? null, input.limit],
  );
  return rows;
}
