import { randomUUID } from 'node:crypto';
import { createPool, Db } from '../../../src/db/pool';
import { createProject, Plan } from '../../../src/db/repositories/projects';
import { updatePolicy } from '../../../src/db/repositories/policies';
import type { GovernanceRequest } from '../../../src/governance/types';

export function testPool(max = 10): Db {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL not set (jest global setup)');
  return createPool(url, max);
}

export async function projectWithPolicy(db: Db, policy: unknown = {}, plan: Plan = 'production'): Promise<string> {
  const project = await createProject(db, { name: `gov-${randomUUID()}`, plan });
  if (policy && Object.keys(policy as object).length > 0) {
    await updatePolicy(db, { projectId: project.id, patch: policy, mode: 'merge', updatedBy: 'test', now: new Date() });
  }
  return project.id;
}

export function request(projectId: string, over: Partial<GovernanceRequest> = {}): GovernanceRequest {
  return {
    projectId,
    requestId: `exec_req_${randomUUID().replace(/-/g, '')}`,
    route: 'executions',
    operation: 'generate.text',
    provider: 'openai',
    model: 'gpt-4o-mini',
    estimatedInputTokens: 100,
    estimatedOutputTokens: 100,
    estimatedCostMicros: 1_000,
    ...over,
  };
}
