import { Queryable } from '../pool';
import { newId } from '../../ids';

export type Plan = 'starter' | 'production' | 'enterprise';
export const PLANS: readonly Plan[] = ['starter', 'production', 'enterprise'];

export interface Project {
  id: string;
  name: string;
  plan: Plan;
  created_at: Date;
  /** Days its records are kept (null: the gateway's RETENTION_DAYS). */
  retention_days: number | null;
}

export async function createProject(db: Queryable, input: { name: string; plan?: Plan }): Promise<Project> {
  const { rows } = await db.query<Project>(
    'INSERT INTO projects (id, name, plan) VALUES ($1, $2, $3) RETURNING *',
    [newId('proj'), input.name, input.plan ?? 'starter'],
  );
  return rows[0];
}

export async function findProject(db: Queryable, id: string): Promise<Project | null> {
  const { rows } = await db.query<Project>('SELECT * FROM projects WHERE id = $1', [id]);
  return rows[0] ?? null;
}

export async function setProjectPlan(db: Queryable, id: string, plan: Plan): Promise<Project | null> {
  const { rows } = await db.query<Project>('UPDATE projects SET plan = $2 WHERE id = $1 RETURNING *', [id, plan]);
  return rows[0] ?? null;
}

export async function findProjectPlan(db: Queryable, id: string): Promise<Plan | null> {
  const { rows } = await db.query<{ plan: Plan }>('SELECT plan FROM projects WHERE id = $1', [id]);
  return rows[0]?.plan ?? null;
}

export async function renameProject(db: Queryable, id: string, name: string): Promise<Project | null> {
  const { rows } = await db.query<Project>('UPDATE projects SET name = $2 WHERE id = $1 RETURNING *', [id, name]);
  return rows[0] ?? null;
}

/** Sets the project's retention override (null: the gateway's RETENTION_DAYS). */
export async function setProjectRetention(db: Queryable, id: string, days: number | null): Promise<Project | null> {
  const { rows } = await db.query<Project>('UPDATE projects SET retention_days = $2 WHERE id = $1 RETURNING *', [id, days]);
  return rows[0] ?? null;
}
