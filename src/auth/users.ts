/** Operator actions on users (the CLI): create with a password, add to a project with a role. */
import type { Queryable } from '../db/pool';
import { findProject } from '../db/repositories/projects';
import { findUserByEmail, insertUser, ROLES, upsertMember, type Role, type User } from '../db/repositories/users';
import { hashPassword, MIN_PASSWORD_LENGTH } from './passwords';

export class UserInputError extends Error {}

export async function createUser(db: Queryable, input: { email: string; password: string }): Promise<User> {
  if (!/^[^\s@]+@[^\s@]+$/.test(input.email.trim())) throw new UserInputError('--email is not an e-mail address');
  if (input.password.length < MIN_PASSWORD_LENGTH) throw new UserInputError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  const user = await insertUser(db, { email: input.email, passwordHash: await hashPassword(input.password) });
  if (!user) throw new UserInputError(`a user with e-mail ${input.email.trim()} exists`);
  return user;
}

export async function addMember(db: Queryable, input: { email: string; projectId: string; role: string }): Promise<{ project_id: string; user_id: string; role: Role }> {
  if (!(ROLES as readonly string[]).includes(input.role)) throw new UserInputError(`--role must be one of ${ROLES.join(', ')}`);
  const user = await findUserByEmail(db, input.email);
  if (!user) throw new UserInputError(`no user with e-mail ${input.email}`);
  if (!(await findProject(db, input.projectId))) throw new UserInputError(`project ${input.projectId} not found`);
  await upsertMember(db, { projectId: input.projectId, userId: user.id, role: input.role as Role });
  return { project_id: input.projectId, user_id: user.id, role: input.role as Role };
}
